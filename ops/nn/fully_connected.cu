// FullyConnected on the GPU: the computation of fully_connected-inl.h with
// cuBLAS products on the op's stream and two small kernels for the bias.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/fully_connected-inl.h"
#include "ops/nn/gemm_steps.h"
#include "ops/nn/nn_common.h"

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
struct FcSteps<gpu> : GemmSteps<gpu, FcSteps<gpu>> {
  static constexpr const char* kName = "FullyConnected";
  template <typename T>
  static void AddBias(const RunContext& rctx, T* out, const T* bias, int64_t rows, int64_t n) {
    Kernel<AddBiasKernel, gpu>::Launch(rctx, rows * n, out, bias, n);
  }
};

TS_REGISTER_OP(FullyConnected).set_attr<FCompute>(kFComputeGPU, FcForward<gpu>);
TS_REGISTER_OP(_backward_FullyConnected).set_attr<FCompute>(kFComputeGPU, FcBackward<gpu>);

}  // namespace tessera::op
