// The sum over a thread block, in double, for the GPU kernels that give a
// block to each reduction (moments, the nn normalisations and losses);
// include from .cu files only.
#pragma once

namespace tessera::op {

// The sum of every thread's `v`, seen by every thread of the block. `buf`
// holds blockDim.x doubles of shared memory; blockDim.x is a power of two.
__device__ inline double BlockSum(double v, double* buf) {
  buf[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
    __syncthreads();
  }
  const double r = buf[0];
  __syncthreads();
  return r;
}

}  // namespace tessera::op
