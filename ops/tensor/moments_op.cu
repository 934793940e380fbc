// moments on the GPU: a block per output sums its elements in double
// (BlockSum), the mean first, then the squared deviations, as the CPU does;
// the backward is a thread per input element (MomentsGradElem).
#include <algorithm>

#include <cuda_runtime.h>

#include "engine/base/cuda_utils.h"
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/block_sum.cuh"
#include "ops/tensor/moments_op-inl.h"

namespace tessera::op {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void MomentsKernel(ReducePlan plan, const T* x, T* mean, OpReqType rm, T* var,
                              OpReqType rv) {
  __shared__ double buf[kThreads];
  const double n = static_cast<double>(plan.red_size);
  for (int64_t o = blockIdx.x; o < plan.out_size; o += gridDim.x) {
    const int64_t base = plan.OutBase(o);
    double s = 0;
    for (int64_t r = threadIdx.x; r < plan.red_size; r += blockDim.x)
      s += static_cast<double>(x[base + plan.RedOffset(r)]);
    const double m = BlockSum(s, buf) / n;
    double ss = 0;
    for (int64_t r = threadIdx.x; r < plan.red_size; r += blockDim.x) {
      const double d = static_cast<double>(x[base + plan.RedOffset(r)]) - m;
      ss += d * d;
    }
    const double v = BlockSum(ss, buf) / n;
    if (threadIdx.x != 0) continue;
    AssignFromDouble(mean[o], m, rm);
    AssignFromDouble(var[o], v, rv);
  }
}

// Input element i as (output, position in its reduction).
struct MomentsGradFlat {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, ReducePlan plan, const T* dm, const T* dv, const T* x,
                             const T* mean, T* dx, OpReqType req) {
    const int64_t o = i / plan.red_size;
    MomentsGradElem::Map(o, plan.OutBase(o) + plan.RedOffset(i % plan.red_size), plan, dm, dv, x,
                         mean, dx, req);
  }
};

}  // namespace

template <>
struct MomentsKernels<gpu> {
  template <typename T>
  static void Forward(const OpContext& ctx, const ReducePlan& plan, const T* x, T* mean,
                      OpReqType rm, T* var, OpReqType rv) {
    if (plan.out_size == 0) return;
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(plan.out_size, 65535 * 8));
    MomentsKernel<T><<<blocks, kThreads, 0, ctx.run_ctx.get_stream<cudaStream_t>()>>>(plan, x, mean,
                                                                                      rm, var, rv);
    TS_CUDA_CALL(cudaGetLastError());
  }
  template <typename T>
  static void Backward(const OpContext& ctx, const ReducePlan& plan, const T* dm, const T* dv,
                       const T* x, const T* mean, T* dx, OpReqType req) {
    Kernel<MomentsGradFlat, gpu>::Launch(ctx.run_ctx, plan.out_size * plan.red_size, plan, dm, dv,
                                         x, mean, dx, req);
  }
};

TS_REGISTER_OP(moments).set_attr<FCompute>(kFComputeGPU, MomentsForward<gpu>);
TS_REGISTER_OP(_backward_moments).set_attr<FCompute>(kFComputeGPU, MomentsBackward<gpu>);

}  // namespace tessera::op
