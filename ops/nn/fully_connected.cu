// FullyConnected on the GPU: the computation of fully_connected-inl.h with
// cuBLAS products on the op's stream and two small kernels for the bias.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/fully_connected-inl.h"
#include "ops/nn/nn_common.h"
#include "ops/tensor/gemm_gpu.h"

namespace tessera::op {
namespace {

// out[i] += bias[i % n], summed in AccType<T>.
struct AddBiasKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, const T* bias, int64_t n) {
    using A = AccType<T>;
    out[i] = static_cast<T>(static_cast<A>(out[i]) + static_cast<A>(bias[i % n]));
  }
};

}  // namespace

template <>
struct FcSteps<gpu> {
  template <typename T>
  static void Gemm(const RunContext& rctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                   const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc,
                   bool accumulate) {
    GemmGpuOne(rctx, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate, "FullyConnected");
  }
  template <typename T>
  static void AddBias(const RunContext& rctx, T* out, const T* bias, int64_t rows, int64_t n) {
    Kernel<AddBiasKernel, gpu>::Launch(rctx, rows * n, out, bias, n);
  }
  template <typename T>
  static void SumRows(const RunContext& rctx, const T* x, int64_t rows, int64_t n, T* out,
                      bool accumulate) {
    Kernel<SumColumnKernel, gpu>::Launch(rctx, n, x, rows, n, out, accumulate);
  }
};

TS_REGISTER_OP(FullyConnected).set_attr<FCompute>(kFComputeGPU, FcForward<gpu>);
TS_REGISTER_OP(_backward_FullyConnected).set_attr<FCompute>(kFComputeGPU, FcBackward<gpu>);

}  // namespace tessera::op
