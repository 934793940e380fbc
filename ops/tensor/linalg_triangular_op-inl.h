// linalg.trmm, linalg.trsm and linalg.syrk and their gradients, for either
// device: matrix products through MatrixProduct<xpu> (trmm multiplies the
// triangle, the other one zeroed), triangular solves through
// TriangularSolve<xpu> (LAPACK's BLAS on the CPU, cuBLAS on the GPU) and
// element kernels. Results go through temp space and are then written or
// added under the request (the output may take B's memory).
#pragma once

#include <vector>

#include "ops/tensor/gemm_gpu.h"
#include "ops/tensor/linalg_op-inl.h"
#include "ops/tensor/matrix_product.h"

namespace tessera::op {

// Element i of a stack of k x k matrices: kept inside the triangle (lower:
// on or below the diagonal; else on or above), zero outside.
struct TriangleOnly {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, const T* src, T* dst, int64_t k, bool lower) {
    const int64_t r = (i / k) % k, c = i % k;
    dst[i] = (lower ? c <= r : c >= r) ? src[i] : T(0);
  }
};

// Above the diagonal, the mirror of the lower triangle: exactly symmetric.
struct MirrorLower {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* a, int64_t k) {
    const int64_t r = (i / k) % k, c = i % k;
    if (c > r) a[i] = a[i - i % (k * k) + c * k + r];
  }
};

// s = d + d^T, matrix by matrix.
struct PlusTranspose {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, const T* d, T* s, int64_t k) {
    const int64_t r = (i / k) % k, c = i % k;
    s[i] = d[i] + d[i - i % (k * k) + c * k + r];
  }
};

// out = v, or out += v.
struct CommitElem {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, const T* v, bool add) {
    out[i] = add ? T(out[i] + v[i]) : v[i];
  }
};

template <typename xpu, typename T>
void CommitTo(const OpContext& ctx, const TBlob& out, OpReqType req, const T* v) {
  if (req == kNullOp) return;
  Kernel<CommitElem, xpu>::Launch(ctx.run_ctx, out.Size(), out.dptr<T>(), v, req == kAddTo);
}

// b (batch of m x n, contiguous) <- alpha op(a)^-1 b, or b op(a)^-1.
template <typename T>
void TriangularSolveCpu(const OpContext& ctx, const GpuTrsm& t, const T* a, T* b);

template <typename xpu, typename T>
void TriangularSolve(const OpContext& ctx, const GpuTrsm& t, const T* a, T* b) {
  if constexpr (xpu::kDevice == DeviceType::kCPU)
    TriangularSolveCpu(ctx, t, a, b);
  else
    TrsmGpu(ctx.run_ctx, DTypeOf<T>(), t, a, b, "linalg.trsm");
}

// Temp space carved in T: n elements at a time.
template <typename T>
struct Carve {
  T* at;
  T* take(int64_t n) {
    T* r = at;
    at += n;
    return r;
  }
};

inline MatrixLayout Stacked(int64_t count, int64_t rows, int64_t cols) {
  MatrixLayout l;
  l.outer = count;
  l.rows = rows;
  l.cols = cols;
  return l;
}

// trmm (kSolve false) or trsm. A (.., k, k), B (.., m, n).
template <bool kSolve, typename xpu>
void TriangForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<LinalgTriangParam>(attrs);
  ForFloatAndDouble(attrs, out[0].dtype(), kSolve ? "linalg.trsm" : "linalg.trmm", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout lb = StackOf(attrs, in[1].shape(), "B");
    const int64_t m = lb.rows, n = lb.cols, k = p.rightside ? n : m, count = lb.count();
    const MatrixLayout la = Stacked(count, k, k);
    Carve<T> space{ctx.requested.at(0).get_space_typed<T>(size_t(count * (m * n + k * k) + 1))};
    T* res = space.take(count * m * n);
    const T* a = in[0].dptr<T>();
    const T* b = in[1].dptr<T>();
    if (kSolve) {
      Kernel<CommitElem, xpu>::Launch(ctx.run_ctx, count * m * n, res, b, false);
      TriangularSolve<xpu>(ctx, GpuTrsm{p.rightside, p.lower, p.transpose, m, n, count, p.alpha}, a,
                           res);
    } else {
      T* tri = space.take(count * k * k);
      Kernel<TriangleOnly, xpu>::Launch(ctx.run_ctx, count * k * k, a, tri, k, p.lower);
      if (!p.rightside)
        MatrixProduct<xpu>::Run(ctx, p.transpose, false, T(p.alpha), tri, la, b, lb, T(0), res, lb);
      else
        MatrixProduct<xpu>::Run(ctx, false, p.transpose, T(p.alpha), b, lb, tri, la, T(0), res, lb);
    }
    CommitTo<xpu>(ctx, out[0], req[0], res);
  });
}

// trmm: in dOut, A, B; out dA, dB.
//   dB = alpha op(A)^T dOut (left) or alpha dOut op(A)^T (right);
//   dA = tri(alpha dOut B^T) (left), tri(alpha B^T dOut) (right), each
//   transposed when A was.
// trsm: in dOut, A, B, C = the forward output; out dA, dB.
//   dB = alpha op(A)^-T dOut (left) or alpha dOut op(A)^-T (right);
//   dA = tri(-dB C^T / alpha) (left), tri(-C^T dB / alpha) (right),
//   transposed likewise.
template <bool kSolve, typename xpu>
void TriangBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<LinalgTriangParam>(attrs);
  ForFloatAndDouble(attrs, in[0].dtype(), "linalg.trmm backward", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout lb = StackOf(attrs, in[2].shape(), "B");
    const int64_t m = lb.rows, n = lb.cols, k = p.rightside ? n : m, count = lb.count();
    const MatrixLayout la = Stacked(count, k, k);
    Carve<T> space{ctx.requested.at(0).get_space_typed<T>(size_t(count * (m * n + 2 * k * k) + 1))};
    const T* dc = in[0].dptr<T>();
    const T* a = in[1].dptr<T>();
    // trmm's dA pairs dOut with B; trsm's pairs dB with its output C.
    const T* other = in[kSolve ? 3 : 2].dptr<T>();
    const T alpha = T(p.alpha), scale = kSolve ? T(-1) / alpha : alpha;
    T* gb = space.take(count * m * n);
    if (req[1] != kNullOp || (kSolve && req[0] != kNullOp)) {
      if (kSolve) {
        Kernel<CommitElem, xpu>::Launch(ctx.run_ctx, count * m * n, gb, dc, false);
        TriangularSolve<xpu>(ctx, GpuTrsm{p.rightside, p.lower, !p.transpose, m, n, count, p.alpha},
                             a, gb);
      } else {
        T* tri = space.take(count * k * k);
        Kernel<TriangleOnly, xpu>::Launch(ctx.run_ctx, count * k * k, a, tri, k, p.lower);
        if (!p.rightside)
          MatrixProduct<xpu>::Run(ctx, !p.transpose, false, alpha, tri, la, dc, lb, T(0), gb, lb);
        else
          MatrixProduct<xpu>::Run(ctx, false, !p.transpose, alpha, dc, lb, tri, la, T(0), gb, lb);
      }
    }
    if (req[0] != kNullOp) {
      const T* g = kSolve ? gb : dc;  // the m x n factor beside `other`
      T* ga = space.take(count * k * k);
      // left: g x^T (k = m), right: x^T g (k = n); transposed when A was.
      const T* first = p.rightside == p.transpose ? g : other;
      const T* second = first == g ? other : g;
      MatrixProduct<xpu>::Run(ctx, p.rightside, !p.rightside, scale, first, lb, second, lb, T(0),
                              ga, la);
      Kernel<TriangleOnly, xpu>::Launch(ctx.run_ctx, count * k * k, ga, ga, k, p.lower);
      CommitTo<xpu>(ctx, out[0], req[0], ga);
    }
    CommitTo<xpu>(ctx, out[1], req[1], gb);
  });
}

// out = alpha A A^T (or alpha A^T A), exactly symmetric: the lower triangle
// mirrored.
template <typename xpu>
void SyrkForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<LinalgSyrkParam>(attrs);
  ForFloatAndDouble(attrs, out[0].dtype(), "linalg.syrk", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout l = StackOf(attrs, in[0].shape(), "A");
    const int64_t k = p.transpose ? l.cols : l.rows, count = l.count();
    T* c = ctx.requested.at(0).get_space_typed<T>(size_t(count * k * k + 1));
    MatrixProduct<xpu>::Run(ctx, p.transpose, !p.transpose, T(p.alpha), in[0].dptr<T>(), l,
                            in[0].dptr<T>(), l, T(0), c, Stacked(count, k, k));
    Kernel<MirrorLower, xpu>::Launch(ctx.run_ctx, count * k * k, c, k);
    CommitTo<xpu>(ctx, out[0], req[0], c);
  });
}

// in dOut, A; dA = alpha (dOut + dOut^T) A, or alpha A (dOut + dOut^T).
template <typename xpu>
void SyrkBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<LinalgSyrkParam>(attrs);
  ForFloatAndDouble(attrs, in[0].dtype(), "linalg.syrk backward", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout l = StackOf(attrs, in[1].shape(), "A");
    const int64_t k = p.transpose ? l.cols : l.rows, count = l.count();
    const MatrixLayout ls = Stacked(count, k, k);
    T* s = ctx.requested.at(0).get_space_typed<T>(size_t(count * k * k + 1));
    Kernel<PlusTranspose, xpu>::Launch(ctx.run_ctx, count * k * k, in[0].dptr<T>(), s, k);
    const T beta = req[0] == kAddTo ? T(1) : T(0), alpha = T(p.alpha);
    const T* a = in[1].dptr<T>();
    if (p.transpose)
      MatrixProduct<xpu>::Run(ctx, false, false, alpha, a, l, s, ls, beta, out[0].dptr<T>(), l);
    else
      MatrixProduct<xpu>::Run(ctx, false, false, alpha, s, ls, a, l, beta, out[0].dptr<T>(), l);
  });
}

}  // namespace tessera::op
