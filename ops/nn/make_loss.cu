// BlockGrad and MakeLoss on the GPU: the identity forward of make_loss-inl.h,
// and MakeLoss's constant gradient; with normalization='valid' one block
// counts the elements above valid_thresh on the device and the fill reads
// the count from there (no copy to the host).
#include <cuda_runtime.h>

#include "engine/base/cuda_utils.h"
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/make_loss-inl.h"

namespace tessera::op {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void CountAbove(const T* y, int64_t n, float thresh, int64_t* count) {
  __shared__ int64_t part[kThreads];
  int64_t c = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    c += static_cast<AccType<T>>(y[i]) > AccType<T>(thresh);
  part[threadIdx.x] = c;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) *count = part[0] > 0 ? part[0] : 1;
}

}  // namespace

// One block counts on the device; the fill reads the count from there.
template <>
struct MakeLossCount<gpu> {
  template <typename T>
  static void Run(const OpContext& ctx, const T* y, int64_t n, float thresh, int64_t* count) {
    CountAbove<T><<<1, kThreads, 0, ctx.run_ctx.get_stream<cudaStream_t>()>>>(y, n, thresh, count);
    TS_CUDA_CALL(cudaGetLastError());
  }
};

TS_REGISTER_OP(BlockGrad).set_attr<FCompute>(kFComputeGPU, IdentityForward<gpu>);
TS_REGISTER_OP(MakeLoss).set_attr<FCompute>(kFComputeGPU, IdentityForward<gpu>);
TS_REGISTER_OP(_backward_MakeLoss).set_attr<FCompute>(kFComputeGPU, MakeLossBackward<gpu>);

}  // namespace tessera::op
