// MatrixProduct<xpu>: c = alpha op(a) op(b) + beta c for every matrix of a
// batch of row-major matrices (linalg_op-inl.h's MatrixLayout, rows on any
// axis), for the linear-algebra ops of either device: the CPU's BLAS batches
// here, cuBLAS's strided batches in matrix_product_cuda.h.
#pragma once

#include "ops/tensor/linalg_op-inl.h"

namespace tessera::op {

// c = alpha op(a) op(b) + beta c for every matrix of the batch on xpu.
template <typename xpu>
struct MatrixProduct {
  template <typename T>
  static void Run(const OpContext& ctx, bool ta, bool tb, T alpha, const T* a,
                  const MatrixLayout& la, const T* b, const MatrixLayout& lb, T beta, T* c,
                  const MatrixLayout& lc);
};

template <>
template <typename T>
void MatrixProduct<cpu>::Run(const OpContext& ctx, bool ta, bool tb, T alpha, const T* a,
                             const MatrixLayout& la, const T* b, const MatrixLayout& lb, T beta,
                             T* c, const MatrixLayout& lc) {
  BatchedProduct(ta, tb, alpha, a, la, b, lb, beta, c, lc, ctx.run_ctx.omp_threads);
}

}  // namespace tessera::op
