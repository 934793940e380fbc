// _sample_multinomial on the GPU: the element kernels of multinomial_op-inl.h
// on the op's stream, after the host checks.
#include <cuda_runtime.h>

#include <vector>

#include "engine/base/cuda_utils.h"
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/multinomial_op-inl.h"

namespace tessera::op {

template <>
std::vector<double> HostValues<gpu>(const RunContext& rctx, const TBlob& b) {
  std::vector<unsigned char> raw(b.bytes());
  cudaStream_t stream = rctx.get_stream<cudaStream_t>();
  TS_CUDA_CALL(cudaMemcpyAsync(raw.data(), b.dptr_, raw.size(), cudaMemcpyDeviceToHost, stream));
  TS_CUDA_CALL(cudaStreamSynchronize(stream));
  return HostValues<cpu>(rctx, TBlob(raw.data(), b.shape(), b.dtype(), Context::CPU()));
}

TS_REGISTER_OP(_sample_multinomial).set_attr<FCompute>(kFComputeGPU, MultinomialCompute<gpu>);
TS_REGISTER_OP(_backward_sample_multinomial)
    .set_attr<FCompute>(kFComputeGPU, MultinomialBackward<gpu>);

}  // namespace tessera::op
