#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/indexing_op-inl.h"

namespace tessera::op {

// Copies the indices to the host and waits for them: mode 'raise' must see
// every index before the gather runs.
template <>
std::vector<int64_t> IndicesToHost<gpu>(const RunContext& rctx, const TBlob& idx) {
  std::vector<unsigned char> raw(idx.bytes());
  cudaStream_t stream = rctx.get_stream<cudaStream_t>();
  TS_CUDA_CALL(cudaMemcpyAsync(raw.data(), idx.dptr_, raw.size(), cudaMemcpyDeviceToHost, stream));
  TS_CUDA_CALL(cudaStreamSynchronize(stream));
  TBlob host(raw.data(), idx.shape(), idx.dtype(), Context::CPU());
  return IndicesToHost<cpu>(rctx, host);
}

TS_REGISTER_OP(take).set_attr<FCompute>(kFComputeGPU, TakeCompute<gpu>);
TS_REGISTER_OP(pick).set_attr<FCompute>(kFComputeGPU, PickCompute<gpu>);
TS_REGISTER_OP(batch_take).set_attr<FCompute>(kFComputeGPU, PickCompute<gpu>);
TS_REGISTER_OP(_backward_pick).set_attr<FCompute>(kFComputeGPU, PickBackwardCompute<gpu>);

}  // namespace tessera::op
