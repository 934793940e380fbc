// GPU kernels of the broadcasting binary operators, and the reduction their
// gradients need.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/elemwise_broadcast_op-inl.h"

namespace tessera::op {

namespace {

constexpr int kReduceThreads = 256;

// One block per gradient element j (grid-stride over j): the block's threads
// share out its broadcast positions, then reduce in shared memory.
template <typename G, int side, int req, typename T>
__global__ void BroadcastReduceKernel(T* gx, const T* g, const T* x, const T* other,
                                      BroadcastReducePlan rp, int64_t nx) {
  using A = AccType<T>;
  __shared__ A partial[kReduceThreads];
  for (int64_t j = blockIdx.x; j < nx; j += gridDim.x) {
    int64_t ko, kt;
    rp.KeptOffsets(j, &ko, &kt);
    const A xv = static_cast<A>(x[j]);
    A acc = A(0);
    for (int64_t r = threadIdx.x; r < rp.red_size; r += blockDim.x) {
      int64_t ro, rt;
      rp.ReducedOffsets(r, &ro, &rt);
      const A tv = static_cast<A>(other[kt + rt]);
      if constexpr (side == 0)
        acc += static_cast<A>(g[ko + ro]) * G::Map(xv, tv);
      else
        acc += static_cast<A>(g[ko + ro]) * G::Map(tv, xv);
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int s = kReduceThreads / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
      __syncthreads();
    }
    if (threadIdx.x == 0) AssignReq<req>(gx[j], partial[0]);
    __syncthreads();
  }
}

}  // namespace

template <typename G, int side, int req, typename T>
void BroadcastReduceGpu(const RunContext& ctx, T* gx, const T* g, const T* x, const T* other,
                        const BroadcastReducePlan& rp, int64_t nx) {
  if (nx <= 0) return;
  const int64_t blocks = std::min<int64_t>(nx, 65535 * 8);
  BroadcastReduceKernel<G, side, req, T>
      <<<static_cast<unsigned>(blocks), kReduceThreads, 0, ctx.get_stream<cudaStream_t>()>>>(
          gx, g, x, other, rp, nx);
  TS_CUDA_CALL(cudaGetLastError());
}

#define TS_REGISTER_BROADCAST_GPU(name, fn, lgrad, rgrad)                   \
  TS_REGISTER_OP(broadcast_##name)                                          \
      .set_attr<FCompute>(kFComputeGPU, BroadcastCompute<gpu, binary::fn>); \
  TS_REGISTER_OP(_backward_broadcast_##name)                                \
      .set_attr<FCompute>(kFComputeGPU, BroadcastGradCompute<gpu, binary::lgrad, binary::rgrad>);
TS_BROADCAST_GRAD_OPS(TS_REGISTER_BROADCAST_GPU)
#undef TS_REGISTER_BROADCAST_GPU

#define TS_REGISTER_BROADCAST_LOGIC_GPU(name) \
  TS_REGISTER_OP(broadcast_##name)            \
      .set_attr<FCompute>(kFComputeGPU, BroadcastCompute<gpu, binary::name>);
TS_BROADCAST_LOGIC_OPS(TS_REGISTER_BROADCAST_LOGIC_GPU)
#undef TS_REGISTER_BROADCAST_LOGIC_GPU

}  // namespace tessera::op
