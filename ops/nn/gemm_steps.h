// GemmSteps (nn_common.h) for both devices: the GEMM for T (on the CPU oneDNN
// or OpenBLAS, the portable kernel for 16-bit floats; on the GPU cuBLAS on
// the op's stream, Op::kName naming the op in its errors) and the column
// sums (the op's threads; a kernel with one thread per column).
#pragma once

#include <cstdint>
#include <type_traits>

#include "ops/nn/nn_common.h"
#include "ops/tensor/gemm.h"
#include "ops/tensor/gemm_gpu.h"

#ifdef __CUDACC__
#include "engine/op/kernel_launch_cuda.cuh"
#endif

namespace tessera::op {

template <typename xpu, typename Op>
struct GemmSteps {
  // C = op(A) op(B), or C += when accumulate; row-major.
  template <typename T>
  static void Gemm(const RunContext& rctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                   const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc,
                   bool accumulate) {
    if constexpr (std::is_same_v<xpu, cpu>)
      GemmFloatAny(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate, rctx.omp_threads);
    else
      GemmGpuOne(rctx, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate, Op::kName);
  }
  // out (+)= the column sums of the rows x n matrix x.
  template <typename T>
  static void SumRows(const RunContext& rctx, const T* x, int64_t rows, int64_t n, T* out,
                      bool accumulate) {
    if constexpr (std::is_same_v<xpu, cpu>)
      op::SumRows(rctx, x, rows, n, out, accumulate);
    else
      Kernel<SumColumnKernel, xpu>::Launch(rctx, n, x, rows, n, out, accumulate);
  }
};

}  // namespace tessera::op
