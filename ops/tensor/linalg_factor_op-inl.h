// The factorisations linalg.potrf, potri, gelqf and syevd and their
// gradients, for either device: the routines through Cholesky<xpu>,
// Lq<xpu> and SymEig<xpu> (LAPACK on the CPU, cuSOLVER on the GPU),
// products through MatrixProduct<xpu>, triangular solves through
// TriangularSolve<xpu>, the rest element kernels; results through temp
// space, then written or added under the request (an output may take the
// input's memory). Registered in linalg_factor_op.cc (CPU) and
// linalg_factor_op.cu (GPU).
#pragma once

#include <string>
#include <type_traits>
#include <vector>

#include "ops/tensor/host_values.h"
#include "ops/tensor/linalg_triangular_op-inl.h"
#include "ops/tensor/solver_gpu.h"

namespace tessera::op {

// Below the diagonal, the mirror of the upper triangle.
struct MirrorUpper {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* a, int64_t k) {
    const int64_t r = (i / k) % k, c = i % k;
    if (c < r) a[i] = a[i - i % (k * k) + c * k + r];
  }
};

// potri's check of its factor, on either device: cuSOLVER's potri does not
// report a zero on the factor's diagonal as LAPACK's does (seen on an H200),
// so the op looks for one itself; info becomes its row, 1-based, as LAPACK's.
struct ZeroOnDiagonal {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, const T* a, int* info, int64_t n) {
    if (info[i] != 0) return;
    const T* m = a + i * n * n;
    for (int64_t j = 0; j < n; ++j) {
      if (m[j * n + j] == T(0)) {
        info[i] = int(j + 1);
        return;
      }
    }
  }
};

template <typename T>
void CholeskyCpu(const OpContext& ctx, const GpuCholesky& c, T* a, int* info);

// Elements of device workspace the routine needs (0 on the CPU).
template <typename xpu, typename T>
int64_t CholeskyWorkspace(const OpContext& ctx, const GpuCholesky& c, const T* a) {
  if constexpr (xpu::kDevice == DeviceType::kCPU)
    return 0;
  else
    return CholeskyWorkspaceGpu(ctx.run_ctx, DTypeOf<T>(), c, const_cast<T*>(a), "linalg");
}

template <typename xpu, typename T>
void Cholesky(const OpContext& ctx, const GpuCholesky& c, T* a, T* work, int64_t lwork, int* info) {
  if constexpr (xpu::kDevice == DeviceType::kCPU)
    CholeskyCpu(ctx, c, a, info);
  else
    CholeskyGpu(ctx.run_ctx, DTypeOf<T>(), c, a, work, lwork, info, "linalg");
}

// Throws for the first matrix whose info is nonzero: "<op>: matrix 3 of
// the batch <what> (LAPACK <routine> info 2)".
inline void CheckInfo(const NodeAttrs& attrs, const std::vector<double>& info, const char* routine,
                      const std::string& what) {
  for (size_t i = 0; i < info.size(); ++i)
    if (info[i] != 0)
      TS_THROW << OpLabel(attrs) << ": matrix " << i << " of the batch " << what << " (LAPACK "
               << routine << " info " << int64_t(info[i]) << ")";
}

// potrf (inverse false) or potri: the routine on a copy of A (potrf's the
// triangle it reads, the other one zero), then potri's result symmetrised.
template <bool kInverse, typename xpu>
void CholeskyForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const bool lower = ParamsOf<LinalgLowerParam>(attrs).lower;
  ForFloatAndDouble(
      attrs, out[0].dtype(), kInverse ? "linalg.potri" : "linalg.potrf", [&](auto zero) {
        using T = decltype(zero);
        const MatrixLayout l = StackOf(attrs, in[0].shape(), "A");
        const int64_t n = l.rows, count = l.count(), nn = n * n;
        const GpuCholesky c{kInverse, lower, n, count};
        const T* a = in[0].dptr<T>();
        const int64_t lwork = CholeskyWorkspace<xpu>(ctx, c, a);
        // The copy, the workspace, then the info values (ints, two a T at most).
        Carve<T> space{
            ctx.requested.at(0).get_space_typed<T>(size_t(count * nn + lwork + count + 1))};
        T* m = space.take(count * nn);
        T* work = space.take(lwork);
        int* info = reinterpret_cast<int*>(space.take(count));
        if (kInverse)
          Kernel<CommitElem, xpu>::Launch(ctx.run_ctx, count * nn, m, a, false);
        else
          Kernel<TriangleOnly, xpu>::Launch(ctx.run_ctx, count * nn, a, m, n, lower);
        Cholesky<xpu>(ctx, c, m, work, lwork, info);
        if (kInverse) Kernel<ZeroOnDiagonal, xpu>::Launch(ctx.run_ctx, count, a, info, n);
        if (kInverse) {
          if (lower)
            Kernel<MirrorLower, xpu>::Launch(ctx.run_ctx, count * nn, m, n);
          else
            Kernel<MirrorUpper, xpu>::Launch(ctx.run_ctx, count * nn, m, n);
        }
        const std::vector<double> host_info =
            HostValues<xpu>(ctx.run_ctx, TBlob(info, Shape{count}, DType::kInt32, ctx.run_ctx.ctx));
        if (kInverse)
          CheckInfo(attrs, host_info, "potri",
                    "has a zero on its diagonal (the input must be a Cholesky factor, as "
                    "linalg.potrf gives)");
        else
          CheckInfo(attrs, host_info, "potrf",
                    "is not positive definite (the input must be symmetric positive definite; "
                    "only its " +
                        std::string(lower ? "lower" : "upper") + " triangle is read)");
        CommitTo<xpu>(ctx, out[0], req[0], m);
      });
}

// potrf: in dL, L; dA = 0.5 L^-T sym(L^T dL) L^-1, sym mirroring the lower
// triangle (upper: dA = 0.5 U^-1 sym(dU U^T) U^-T, mirroring the upper).
template <typename xpu>
void PotrfBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const bool lower = ParamsOf<LinalgLowerParam>(attrs).lower;
  ForFloatAndDouble(attrs, in[0].dtype(), "linalg.potrf backward", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout l = StackOf(attrs, in[1].shape(), "L");
    const int64_t n = l.rows, count = l.count(), nn = n * n;
    Carve<T> space{ctx.requested.at(0).get_space_typed<T>(size_t(2 * count * nn + 1))};
    T* tri = space.take(count * nn);
    T* g = space.take(count * nn);
    const T* f = in[1].dptr<T>();
    Kernel<TriangleOnly, xpu>::Launch(ctx.run_ctx, count * nn, f, tri, n, lower);
    // L^T dL (upper: dU U^T), then mirrored from the same triangle.
    if (lower)
      MatrixProduct<xpu>::Run(ctx, true, false, T(1), tri, l, in[0].dptr<T>(), l, T(0), g, l);
    else
      MatrixProduct<xpu>::Run(ctx, false, true, T(1), in[0].dptr<T>(), l, tri, l, T(0), g, l);
    if (lower)
      Kernel<MirrorLower, xpu>::Launch(ctx.run_ctx, count * nn, g, n);
    else
      Kernel<MirrorUpper, xpu>::Launch(ctx.run_ctx, count * nn, g, n);
    TriangularSolve<xpu>(ctx, GpuTrsm{false, lower, lower, n, n, count, 1.0}, f, g);
    TriangularSolve<xpu>(ctx, GpuTrsm{true, lower, !lower, n, n, count, 0.5}, f, g);
    CommitTo<xpu>(ctx, out[0], req[0], g);
  });
}

// potri: in dOut, B (the factor), X = the forward output; S = dOut + dOut^T:
// lower: dB = -tril(X S B^-T); upper: dB = -triu(B^-T S X).
template <typename xpu>
void PotriBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const bool lower = ParamsOf<LinalgLowerParam>(attrs).lower;
  ForFloatAndDouble(attrs, in[0].dtype(), "linalg.potri backward", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout l = StackOf(attrs, in[1].shape(), "A");
    const int64_t n = l.rows, count = l.count(), nn = n * n;
    Carve<T> space{ctx.requested.at(0).get_space_typed<T>(size_t(2 * count * nn + 1))};
    T* s = space.take(count * nn);
    T* g = space.take(count * nn);
    const T* b = in[1].dptr<T>();
    const T* x = in[2].dptr<T>();
    Kernel<PlusTranspose, xpu>::Launch(ctx.run_ctx, count * nn, in[0].dptr<T>(), s, n);
    if (lower) {
      MatrixProduct<xpu>::Run(ctx, false, false, T(1), x, l, s, l, T(0), g, l);
      TriangularSolve<xpu>(ctx, GpuTrsm{true, true, true, n, n, count, -1.0}, b, g);
    } else {
      MatrixProduct<xpu>::Run(ctx, false, false, T(1), s, l, x, l, T(0), g, l);
      TriangularSolve<xpu>(ctx, GpuTrsm{false, false, true, n, n, count, -1.0}, b, g);
    }
    Kernel<TriangleOnly, xpu>::Launch(ctx.run_ctx, count * nn, g, g, n, lower);
    CommitTo<xpu>(ctx, out[0], req[0], g);
  });
}

// ---------------------------------------------------------------------------
// gelqf

// L (m x m) from the QR of A^T left in q (m x n, row-major view): R's upper
// triangle read column-major is L's lower one read row-major.
struct LFromQr {
  template <typename T>
  TS_XINLINE static void Map(int64_t e, const T* q, T* l, int64_t m, int64_t n) {
    const int64_t i = e / (m * m), r = (e / m) % m, c = e % m;
    l[e] = c <= r ? q[i * m * n + r * n + c] : T(0);
  }
};

template <typename T>
void LqCpu(const OpContext& ctx, int64_t m, int64_t n, int64_t count, T* q, T* l, int* info);

// q (count m x n, A's copy) becomes Q and l gets L; info, info2 per matrix.
template <typename xpu, typename T>
void Lq(const OpContext& ctx, int64_t m, int64_t n, int64_t count, T* q, T* l, T* tau, T* work,
        int64_t lwork, int* info, int* info2) {
  if constexpr (xpu::kDevice == DeviceType::kCPU) {
    LqCpu(ctx, m, n, count, q, l, info);
    for (int64_t i = 0; i < count; ++i) info2[i] = 0;
  } else {
    QrGpu(ctx.run_ctx, DTypeOf<T>(), GpuQr{false, m, n, count}, q, tau, work, lwork, info,
          "linalg.gelqf");
    Kernel<LFromQr, xpu>::Launch(ctx.run_ctx, count * m * m, q, l, m, n);
    QrGpu(ctx.run_ctx, DTypeOf<T>(), GpuQr{true, m, n, count}, q, tau, work, lwork, info2,
          "linalg.gelqf");
  }
}

template <typename xpu>
void GelqfForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp && req[1] == kNullOp) return;
  ForFloatAndDouble(attrs, in[0].dtype(), "linalg.gelqf", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout lay = StackOf(attrs, in[0].shape(), "A");
    const int64_t m = lay.rows, n = lay.cols, count = lay.count();
    const T* a = in[0].dptr<T>();
    int64_t lwork = 0;
    if constexpr (xpu::kDevice != DeviceType::kCPU)
      lwork = QrWorkspaceGpu(ctx.run_ctx, DTypeOf<T>(), GpuQr{false, m, n, count},
                             const_cast<T*>(a), const_cast<T*>(a), "linalg.gelqf");
    Carve<T> space{ctx.requested.at(0).get_space_typed<T>(
        size_t(count * (m * n + m * m + m + 2) + lwork + 1))};
    T* q = space.take(count * m * n);
    T* l = space.take(count * m * m);
    T* tau = space.take(count * m);
    T* work = space.take(lwork);
    int* info = reinterpret_cast<int*>(space.take(2 * count));
    Kernel<CommitElem, xpu>::Launch(ctx.run_ctx, count * m * n, q, a, false);
    Lq<xpu>(ctx, m, n, count, q, l, tau, work, lwork, info, info + count);
    const std::vector<double> host_info =
        HostValues<xpu>(ctx.run_ctx, TBlob(info, Shape{2 * count}, DType::kInt32, ctx.run_ctx.ctx));
    std::vector<double> first(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i)
      first[size_t(i)] =
          host_info[size_t(i)] != 0 ? host_info[size_t(i)] : host_info[size_t(count + i)];
    CheckInfo(attrs, first, "geqrf/orgqr", "could not be factored");
    CommitTo<xpu>(ctx, out[0], req[0], q);
    CommitTo<xpu>(ctx, out[1], req[1], l);
  });
}

// in dQ, dL, Q, L; M = L^T dL - dQ Q^T mirrored from its lower triangle;
// dA = L^-T (dQ + M Q).
template <typename xpu>
void GelqfBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  ForFloatAndDouble(attrs, in[0].dtype(), "linalg.gelqf backward", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout lq = StackOf(attrs, in[2].shape(), "Q");
    const int64_t m = lq.rows, n = lq.cols, count = lq.count();
    const MatrixLayout ll = Stacked(count, m, m);
    Carve<T> space{ctx.requested.at(0).get_space_typed<T>(size_t(count * (m * m + m * n) + 1))};
    T* mat = space.take(count * m * m);
    T* g = space.take(count * m * n);
    const T* dq = in[0].dptr<T>();
    const T* q = in[2].dptr<T>();
    const T* lf = in[3].dptr<T>();
    MatrixProduct<xpu>::Run(ctx, true, false, T(1), lf, ll, in[1].dptr<T>(), ll, T(0), mat, ll);
    MatrixProduct<xpu>::Run(ctx, false, true, T(-1), dq, lq, q, lq, T(1), mat, ll);
    Kernel<MirrorLower, xpu>::Launch(ctx.run_ctx, count * m * m, mat, m);
    Kernel<CommitElem, xpu>::Launch(ctx.run_ctx, count * m * n, g, dq, false);
    MatrixProduct<xpu>::Run(ctx, false, false, T(1), mat, ll, q, lq, T(1), g, lq);
    TriangularSolve<xpu>(ctx, GpuTrsm{false, true, true, m, n, count, 1.0}, lf, g);
    CommitTo<xpu>(ctx, out[0], req[0], g);
  });
}

// ---------------------------------------------------------------------------
// syevd

TS_XINLINE float Magnitude(float v) {
  return fabsf(v);
}
TS_XINLINE double Magnitude(double v) {
  return fabs(v);
}

// Row e of the eigenvectors turned so that its entry of largest magnitude,
// the first of equals, is positive: MXNet's rule, which makes the result
// independent of the library's signs.
struct NormaliseSign {
  template <typename T>
  TS_XINLINE static void Map(int64_t e, T* u, int64_t n) {
    T* row = u + e * n;
    int64_t k = 0;
    for (int64_t j = 1; j < n; ++j)
      if (Magnitude(row[j]) > Magnitude(row[k])) k = j;
    if (row[k] < 0)
      for (int64_t j = 0; j < n; ++j) row[j] = -row[j];
  }
};

template <typename T>
void SymEigCpu(const OpContext& ctx, int64_t n, int64_t count, T* u, T* w, int* info);

template <typename xpu, typename T>
void SymEig(const OpContext& ctx, int64_t n, int64_t count, T* u, T* w, T* work, int64_t lwork,
            int* info) {
  if constexpr (xpu::kDevice == DeviceType::kCPU)
    SymEigCpu(ctx, n, count, u, w, info);
  else
    SymEigGpu(ctx.run_ctx, DTypeOf<T>(), n, count, u, w, work, lwork, info, "linalg.syevd");
}

template <typename xpu>
void SyevdForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp && req[1] == kNullOp) return;
  ForFloatAndDouble(attrs, in[0].dtype(), "linalg.syevd", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout l = StackOf(attrs, in[0].shape(), "A");
    const int64_t n = l.rows, count = l.count();
    const T* a = in[0].dptr<T>();
    int64_t lwork = 0;
    if constexpr (xpu::kDevice != DeviceType::kCPU)
      lwork = SymEigWorkspaceGpu(ctx.run_ctx, DTypeOf<T>(), n, const_cast<T*>(a), const_cast<T*>(a),
                                 "linalg.syevd");
    Carve<T> space{
        ctx.requested.at(0).get_space_typed<T>(size_t(count * (n * n + n + 1) + lwork + 1))};
    T* u = space.take(count * n * n);
    T* w = space.take(count * n);
    T* work = space.take(lwork);
    int* info = reinterpret_cast<int*>(space.take(count));
    Kernel<CommitElem, xpu>::Launch(ctx.run_ctx, count * n * n, u, a, false);
    SymEig<xpu>(ctx, n, count, u, w, work, lwork, info);
    Kernel<NormaliseSign, xpu>::Launch(ctx.run_ctx, count * n, u, n);
    CheckInfo(
        attrs,
        HostValues<xpu>(ctx.run_ctx, TBlob(info, Shape{count}, DType::kInt32, ctx.run_ctx.ctx)),
        "syevd", "did not converge");
    CommitTo<xpu>(ctx, out[0], req[0], u);
    CommitTo<xpu>(ctx, out[1], req[1], w);
  });
}

// Element (i, r, c) of Y: dL_r on the diagonal; off it, for the pair's
// lower element (p > q), (X_pq - X_qp) / (2 max(L_p - L_q, eps)), on both.
struct SyevdY {
  template <typename T>
  TS_XINLINE static void Map(int64_t e, const T* x, const T* dw, const T* w, int64_t n, T eps,
                             T* y) {
    const int64_t nn = n * n, i = e / nn, r = (e % nn) / n, c = e % n;
    if (r == c) {
      y[e] = dw[i * n + r];
      return;
    }
    const int64_t p = r > c ? r : c, q = r > c ? c : r;
    const T* xi = x + i * nn;
    const T gap = w[i * n + p] - w[i * n + q];
    y[e] = (xi[p * n + q] - xi[q * n + p]) / (2 * (gap < eps ? eps : gap));
  }
};

// in dU, dL, U, L; X = dU U^T; dA = U^T Y U. Undefined for repeated
// eigenvalues (as MXNet's); eps keeps it finite.
template <typename xpu>
void SyevdBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  ForFloatAndDouble(attrs, in[0].dtype(), "linalg.syevd backward", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout l = StackOf(attrs, in[2].shape(), "U");
    const int64_t n = l.rows, count = l.count(), nn = n * n;
    const T eps = std::is_same_v<T, float> ? T(1e-30) : T(1e-100);
    Carve<T> space{ctx.requested.at(0).get_space_typed<T>(size_t(2 * count * nn + 1))};
    T* x = space.take(count * nn);
    T* y = space.take(count * nn);
    const T* u = in[2].dptr<T>();
    MatrixProduct<xpu>::Run(ctx, false, true, T(1), in[0].dptr<T>(), l, u, l, T(0), x, l);
    Kernel<SyevdY, xpu>::Launch(ctx.run_ctx, count * nn, x, in[1].dptr<T>(), in[3].dptr<T>(), n,
                                eps, y);
    MatrixProduct<xpu>::Run(ctx, false, false, T(1), y, l, u, l, T(0), x, l);  // Y U
    MatrixProduct<xpu>::Run(ctx, true, false, T(1), u, l, x, l, req[0] == kAddTo ? T(1) : T(0),
                            out[0].dptr<T>(), l);
  });
}

}  // namespace tessera::op
