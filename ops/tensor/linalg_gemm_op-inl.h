// linalg.gemm (alpha op(A) op(B) + beta C) and linalg.gemm2 (alpha op(A)
// op(B)), batched, with the rows on any axis but the last (MXNet's `axis`):
// the computation over MatrixProduct<xpu> (the CPU's BLAS batches, cuBLAS
// on the GPU) and element kernels, shared by the CPU (linalg_gemm_op.cc) and
// GPU (linalg_gemm_op.cu) registrations.
#pragma once

#include <type_traits>
#include <vector>

#include "ops/tensor/linalg_op-inl.h"
#include "ops/tensor/matrix_product.h"

namespace tessera::op {

template <typename P>
int GemmRowAxis(const NodeAttrs& attrs, int ndim) {
  return NormalizeAxis(ParamsOf<P>(attrs).axis, ndim, OpLabel(attrs).c_str());
}

// y[i] = (keep ? y[i] : 0) + s x[i]
struct ScaledAddElem {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* y, const T* x, T s, bool keep) {
    y[i] = (keep ? y[i] : T(0)) + s * x[i];
  }
};

// in: A, B[, C]; out = alpha op(A) op(B) (+ beta C).
template <typename xpu, typename P>
void GemmForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<P>(attrs);
  ForFloatAndDouble(attrs, out[0].dtype(), "linalg.gemm", [&](auto zero) {
    using T = decltype(zero);
    const int ax = GemmRowAxis<P>(attrs, out[0].shape().ndim());
    const MatrixLayout la = LayoutOf(in[0].shape(), ax), lb = LayoutOf(in[1].shape(), ax),
                       lc = LayoutOf(out[0].shape(), ax);
    T* c = out[0].dptr<T>();
    const int64_t n = out[0].Size();
    T beta = 0;
    if constexpr (std::is_same_v<P, LinalgGemmParam>) {
      // Writing: C scaled by the product's beta. Adding: C's share added after.
      const T* cin = in[2].dptr<T>();
      if (req[0] != kAddTo) {
        if (cin != c) Kernel<ScaledAddElem, xpu>::Launch(ctx.run_ctx, n, c, cin, T(1), false);
        beta = T(p.beta);
      }
    }
    if (req[0] == kAddTo) beta = 1;
    MatrixProduct<xpu>::Run(ctx, p.transpose_a, p.transpose_b, T(p.alpha), in[0].dptr<T>(), la,
                            in[1].dptr<T>(), lb, beta, c, lc);
    if constexpr (std::is_same_v<P, LinalgGemmParam>) {
      if (req[0] == kAddTo)
        Kernel<ScaledAddElem, xpu>::Launch(ctx.run_ctx, n, c, in[2].dptr<T>(), T(p.beta), true);
    }
  });
}

// in: dOut, A, B; out: dA, dB[, dC]. With op(A) m x k, op(B) k x n:
// d op(A) = alpha dOut op(B)^T, d op(B) = alpha op(A)^T dOut, dC = beta dOut.
template <typename xpu, typename P>
void GemmBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<P>(attrs);
  ForFloatAndDouble(attrs, in[0].dtype(), "linalg.gemm backward", [&](auto zero) {
    using T = decltype(zero);
    const int ax = GemmRowAxis<P>(attrs, in[0].shape().ndim());
    const MatrixLayout lc = LayoutOf(in[0].shape(), ax), la = LayoutOf(in[1].shape(), ax),
                       lb = LayoutOf(in[2].shape(), ax);
    const T* dc = in[0].dptr<T>();
    const T* a = in[1].dptr<T>();
    const T* b = in[2].dptr<T>();
    const bool ta = p.transpose_a, tb = p.transpose_b;
    const T alpha = T(p.alpha);
    auto beta = [&](size_t i) { return req[i] == kAddTo ? T(1) : T(0); };
    using Product = MatrixProduct<xpu>;
    if (req[0] != kNullOp) {
      if (!ta)
        Product::Run(ctx, false, !tb, alpha, dc, lc, b, lb, beta(0), out[0].dptr<T>(), la);
      else
        Product::Run(ctx, tb, true, alpha, b, lb, dc, lc, beta(0), out[0].dptr<T>(), la);
    }
    if (req[1] != kNullOp) {
      if (!tb)
        Product::Run(ctx, !ta, false, alpha, a, la, dc, lc, beta(1), out[1].dptr<T>(), lb);
      else
        Product::Run(ctx, true, ta, alpha, dc, lc, a, la, beta(1), out[1].dptr<T>(), lb);
    }
    if constexpr (std::is_same_v<P, LinalgGemmParam>) {
      if (req[2] != kNullOp)
        Kernel<ScaledAddElem, xpu>::Launch(ctx.run_ctx, in[0].Size(), out[2].dptr<T>(), dc,
                                           T(p.beta), req[2] == kAddTo);
    }
  });
}

}  // namespace tessera::op
