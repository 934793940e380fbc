// linalg.inverse, linalg.det and linalg.slogdet and their gradients, for
// either device: LU factorisations and inverses through LuFactor<xpu> /
// LuInvert<xpu> (LAPACK on the CPU, cuBLAS's batched getrf / getri on the
// GPU: the same factors of the transpose, 1-based pivots), products through
// MatrixProduct<xpu>, the rest element kernels. Singular matrices are found
// from the routines' info values on the host.
#pragma once

#include <math.h>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "ops/tensor/gemm_gpu.h"
#include "ops/tensor/host_values.h"
#include "ops/tensor/linalg_op-inl.h"
#include "ops/tensor/linalg_triangular_op-inl.h"
#include "ops/tensor/matrix_product.h"

namespace tessera::op {

template <bool kLog>
constexpr int kNumValues = kLog ? 2 : 1;

// Work space of an LU op, carved from its temp space (8-byte units).
template <typename T>
struct LuSpace {
  T* lu;        // count n x n
  T* inv;       // count n x n
  int* piv;     // count n
  int* info;    // count
  int* info2;   // count
  void** ptrs;  // 2 count, for the GPU's batched calls
};

template <typename T>
LuSpace<T> CarveLu(const OpContext& ctx, int64_t n, int64_t count) {
  const int64_t nn = n * n, ints = (count * (n + 2) + 1) / 2;  // two ints per unit
  int64_t* at =
      ctx.requested.at(0).get_space_typed<int64_t>(size_t(2 * count * nn + ints + 2 * count + 1));
  LuSpace<T> s;
  s.lu = reinterpret_cast<T*>(at);
  s.inv = s.lu + count * nn;
  int64_t* rest = at + 2 * count * nn * int64_t(sizeof(T)) / 8;
  s.piv = reinterpret_cast<int*>(rest);
  s.info = s.piv + count * n;
  s.info2 = s.info + count;
  s.ptrs = reinterpret_cast<void**>(rest + ints);
  return s;
}

template <typename T>
void LuFactorCpu(const OpContext& ctx, int64_t n, int64_t count, T* a, int* piv, int* info);
template <typename T>
void LuInvertCpu(const OpContext& ctx, int64_t n, int64_t count, const T* lu, const int* piv,
                 T* inv, int* info);

template <typename xpu, typename T>
void LuFactor(const OpContext& ctx, int64_t n, int64_t count, T* a, int* piv, int* info,
              void** ptrs) {
  if constexpr (xpu::kDevice == DeviceType::kCPU)
    LuFactorCpu(ctx, n, count, a, piv, info);
  else
    LuFactorGpu(ctx.run_ctx, DTypeOf<T>(), n, count, a, piv, info, ptrs, "linalg");
}

template <typename xpu, typename T>
void LuInvert(const OpContext& ctx, int64_t n, int64_t count, const T* lu, const int* piv, T* inv,
              int* info, void** ptrs) {
  if constexpr (xpu::kDevice == DeviceType::kCPU)
    LuInvertCpu(ctx, n, count, lu, piv, inv, info);
  else
    LuInvertGpu(ctx.run_ctx, DTypeOf<T>(), n, count, lu, piv, inv, info, ptrs, "linalg");
}

// Ints of device xpu on the host.
template <typename xpu>
std::vector<double> HostInts(const OpContext& ctx, const int* p, int64_t count) {
  return HostValues<xpu>(ctx.run_ctx,
                         TBlob(const_cast<int*>(p), Shape{count}, DType::kInt32, ctx.run_ctx.ctx));
}

TS_XINLINE float LogAbs(float u) {
  return logf(fabsf(u));
}
TS_XINLINE double LogAbs(double u) {
  return log(fabs(u));
}
TS_XINLINE float Exp(float u) {
  return expf(u);
}
TS_XINLINE double Exp(double u) {
  return exp(u);
}

// Matrix i: the sign and log |det| of the matrix whose LU factors (of its
// transpose, which has the same determinant) are at lu, with 1-based
// pivots; det = sign exp(logabs), or both for slogdet.
struct DetOfLu {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, const T* lu, const int* piv, int64_t n, bool log_out,
                             T* first, OpReqType r0, T* second, OpReqType r1) {
    T s = 1, l = 0;
    for (int64_t j = 0; j < n; ++j) {
      const T u = lu[i * n * n + j * n + j];
      if (piv[i * n + j] != j + 1) s = -s;
      if (u < 0) s = -s;
      if (u == 0) s = 0;
      l += LogAbs(u);
    }
    if (log_out) {
      AssignReqAt(first[i], s, r0);
      AssignReqAt(second[i], l, r1);
    } else {
      AssignReqAt(first[i], s == 0 ? T(0) : T(s * Exp(l)), r0);
    }
  }
};

// Element (i, r, c) of dA: scale_i A_i^-T, or zero for a singular matrix
// (MXNet's rule). value: logabsdet (slogdet) or det.
struct DetGradElem {
  template <typename T>
  TS_XINLINE static void Map(int64_t e, const T* g, const T* value, const T* inv, int64_t n,
                             bool log_in, T* da, OpReqType req) {
    const int64_t nn = n * n, i = e / nn, r = (e % nn) / n, c = e % n;
    const bool singular = log_in ? isinf(value[i]) && value[i] < 0 : value[i] == 0;
    const T scale = log_in ? g[i] : T(g[i] * value[i]);
    const T v = singular ? T(0) : T(scale * inv[i * nn + c * n + r]);
    if (req == kAddTo) {
      if (!singular) da[e] = T(da[e] + v);
    } else {
      da[e] = v;
    }
  }
};

// The first matrix whose info (or, where that is zero, info2) is nonzero,
// as an error naming the op.
inline void CheckInvertible(const NodeAttrs& attrs, const std::vector<double>& info,
                            const std::vector<double>& info2) {
  for (size_t i = 0; i < info.size(); ++i) {
    const double bad = info[i] != 0 ? info[i] : info2[i];
    if (bad != 0)
      TS_THROW << OpLabel(attrs) << ": matrix " << i
               << " of the batch is singular (LAPACK getrf/getri info " << int64_t(bad) << ")";
  }
}

template <typename xpu>
void InverseForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  ForFloatAndDouble(attrs, out[0].dtype(), "linalg.inverse", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout l = StackOf(attrs, in[0].shape(), "A");
    const int64_t n = l.rows, count = l.count();
    const LuSpace<T> s = CarveLu<T>(ctx, n, count);
    Kernel<CommitElem, xpu>::Launch(ctx.run_ctx, count * n * n, s.lu, in[0].dptr<T>(), false);
    LuFactor<xpu>(ctx, n, count, s.lu, s.piv, s.info, s.ptrs);
    LuInvert<xpu>(ctx, n, count, s.lu, s.piv, s.inv, s.info2, s.ptrs);
    CheckInvertible(attrs, HostInts<xpu>(ctx, s.info, count), HostInts<xpu>(ctx, s.info2, count));
    CommitTo<xpu>(ctx, out[0], req[0], s.inv);
  });
}

// in dY, Y = A^-1; dA = -Y^T dY Y^T.
template <typename xpu>
void InverseBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  ForFloatAndDouble(attrs, in[0].dtype(), "linalg.inverse backward", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout l = StackOf(attrs, in[1].shape(), "A");
    const int64_t n = l.rows, count = l.count();
    T* m = ctx.requested.at(0).get_space_typed<T>(size_t(count * n * n + 1));
    const T* y = in[1].dptr<T>();
    MatrixProduct<xpu>::Run(ctx, true, false, T(1), y, l, in[0].dptr<T>(), l, T(0), m, l);
    MatrixProduct<xpu>::Run(ctx, false, true, T(-1), m, l, y, l, req[0] == kAddTo ? T(1) : T(0),
                            out[0].dptr<T>(), l);
  });
}

// det / slogdet: outputs [det] or [sign, logabsdet], then the LU factors
// (A's shape) and the pivots (int32; written only when asked to write).
template <bool kLog, typename xpu>
void DetForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  constexpr int kLu = kNumValues<kLog>, kPiv = kLu + 1;
  ForFloatAndDouble(attrs, in[0].dtype(), kLog ? "linalg.slogdet" : "linalg.det", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout l = StackOf(attrs, in[0].shape(), "A");
    const int64_t n = l.rows, count = l.count();
    const LuSpace<T> s = CarveLu<T>(ctx, n, count);
    const bool own_pivots = req[kPiv] == kNullOp || req[kPiv] == kAddTo;
    int* piv = own_pivots ? s.piv : out[kPiv].dptr<int>();
    Kernel<CommitElem, xpu>::Launch(ctx.run_ctx, count * n * n, s.lu, in[0].dptr<T>(), false);
    LuFactor<xpu>(ctx, n, count, s.lu, piv, s.info, s.ptrs);  // info > 0: a zero pivot, det 0
    T* second = kLog ? out[1].dptr<T>() : nullptr;
    Kernel<DetOfLu, xpu>::Launch(ctx.run_ctx, count, s.lu, piv, n, kLog, out[0].dptr<T>(), req[0],
                                 second, kLog ? req[1] : kNullOp);
    CommitTo<xpu>(ctx, out[kLu], req[kLu], s.lu);
  });
}

// det:     in ddet, det, LU, pivots;            dA = ddet det A^-T.
// slogdet: in dlogabsdet, sign, logabsdet, LU, pivots; dA = dlogabsdet A^-T.
// A matrix with det 0 gets a zero gradient (MXNet's rule); sign gets none.
template <bool kLog, typename xpu>
void DetBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  constexpr int kLu = kNumValues<kLog> + 1, kPiv = kLu + 1;
  ForFloatAndDouble(attrs, in[0].dtype(), "linalg.det backward", [&](auto zero) {
    using T = decltype(zero);
    const MatrixLayout l = StackOf(attrs, in[kLu].shape(), "A");
    const int64_t n = l.rows, count = l.count();
    const int* piv = in[kPiv].dptr<int>();
    const std::vector<double> host_piv = HostInts<xpu>(ctx, piv, count * n);
    for (int64_t k = 0; k < count * n; ++k)  // the routines read the rows they name
      TS_CHECK(host_piv[size_t(k)] >= 1 && host_piv[size_t(k)] <= double(n))
          << OpLabel(attrs) << ": pivot " << k % n << " of matrix " << k / n << " is "
          << host_piv[size_t(k)] << ", not a row in [1, " << n << "]";
    const LuSpace<T> s = CarveLu<T>(ctx, n, count);
    // A singular matrix's inverse fails (its info is ignored): its gradient is zero.
    LuInvert<xpu>(ctx, n, count, in[kLu].dptr<T>(), piv, s.inv, s.info2, s.ptrs);
    Kernel<DetGradElem, xpu>::Launch(ctx.run_ctx, count * n * n, in[0].dptr<T>(),
                                     in[kLog ? 2 : 1].dptr<T>(), s.inv, n, kLog, out[0].dptr<T>(),
                                     req[0]);
  });
}

}  // namespace tessera::op
