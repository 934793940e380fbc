// MatrixProduct<gpu> (matrix_product.h): cuBLAS's strided batches
// (gemm_gpu.h) on the op's stream. Include from files built with CUDA.
#pragma once

#include "ops/tensor/gemm_gpu.h"
#include "ops/tensor/matrix_product.h"

namespace tessera::op {

// Matrices stacked on the leading axes (inner 1) are one strided batch;
// with the rows on another axis, the matrices of one leading index
// interleave `cols` apart, a strided batch each.
template <>
template <typename T>
void MatrixProduct<gpu>::Run(const OpContext& ctx, bool ta, bool tb, T alpha, const T* a,
                             const MatrixLayout& la, const T* b, const MatrixLayout& lb, T beta,
                             T* c, const MatrixLayout& lc) {
  GpuGemm g;
  g.trans_a = ta;
  g.trans_b = tb;
  g.m = lc.rows;
  g.n = lc.cols;
  g.k = ta ? la.rows : la.cols;
  g.lda = la.ld();
  g.ldb = lb.ld();
  g.ldc = lc.ld();
  g.alpha = double(alpha);
  g.beta = double(beta);
  const bool stacked = la.inner == 1 && lb.inner == 1 && lc.inner == 1;
  g.batch = stacked ? lc.count() : lc.inner;
  g.stride_a = stacked ? la.rows * la.cols : la.cols;
  g.stride_b = stacked ? lb.rows * lb.cols : lb.cols;
  g.stride_c = stacked ? lc.rows * lc.cols : lc.cols;
  for (int64_t o = 0, groups = stacked ? 1 : lc.outer; o < groups; ++o)
    GemmGpu(ctx.run_ctx, DTypeOf<T>(), g, a + la.Offset(o * la.inner), b + lb.Offset(o * lb.inner),
            c + lc.Offset(o * lc.inner), "linalg.gemm");
}

}  // namespace tessera::op
