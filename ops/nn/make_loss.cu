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

// grad = scale, divided by *count when given (normalization='valid').
template <int req>
struct MakeLossGradKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* grad, float scale, const int64_t* count) {
    AssignReq<req>(grad[i], static_cast<T>(count ? scale / static_cast<float>(*count) : scale));
  }
};

void MakeLossBackwardGpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                         const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<MakeLossParam>(attrs);
  SwitchFloatDType(
      out[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const int64_t n = in[0].Size();
        float scale = p.grad_scale;
        int64_t* count = nullptr;
        if (p.normalization == makeloss::kBatch) {
          scale /= static_cast<float>(in[0].shape()[0]);
        } else if (p.normalization == makeloss::kValid) {
          count = ctx.requested.at(0).get_space_typed<int64_t>(1);
          CountAbove<T><<<1, kThreads, 0, ctx.run_ctx.get_stream<cudaStream_t>()>>>(
              in[0].dptr<T>(), n, p.valid_thresh, count);
          TS_CUDA_CALL(cudaGetLastError());
        }
        SwitchReq(req[0], [&](auto r) {
          Kernel<MakeLossGradKernel<r.value>, gpu>::Launch(ctx.run_ctx, n, out[0].dptr<T>(), scale,
                                                           static_cast<const int64_t*>(count));
        });
      },
      "_backward_MakeLoss");
}

}  // namespace

TS_REGISTER_OP(BlockGrad).set_attr<FCompute>(kFComputeGPU, IdentityForward<gpu>);
TS_REGISTER_OP(MakeLoss).set_attr<FCompute>(kFComputeGPU, IdentityForward<gpu>);
TS_REGISTER_OP(_backward_MakeLoss).set_attr<FCompute>(kFComputeGPU, MakeLossBackwardGpu);

}  // namespace tessera::op
