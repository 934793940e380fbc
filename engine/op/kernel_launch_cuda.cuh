// The GPU half of Kernel<OP, xpu>::Launch; include from .cu files only.
#pragma once

#include <cuda_runtime.h>

#include "engine/base/cuda_utils.h"
#include "engine/op/kernel_launch.h"

namespace tessera::op {

template <typename OP, typename... Args>
__global__ void KernelGridStride(int64_t n, Args... args) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x)
    OP::Map(i, args...);
}

template <typename OP>
struct Kernel<OP, gpu> {
  static constexpr int kThreads = 256;
  template <typename... Args>
  static void Launch(const RunContext& ctx, int64_t n, Args... args) {
    if (n <= 0) return;
    const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, 65535 * 8);
    KernelGridStride<OP, Args...>
        <<<static_cast<unsigned>(blocks), kThreads, 0, ctx.get_stream<cudaStream_t>()>>>(n,
                                                                                         args...);
    TS_CUDA_CALL(cudaGetLastError());
  }
};

}  // namespace tessera::op
