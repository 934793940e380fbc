// SVMOutput on the GPU: the element kernels of svm_output-inl.h. The labels
// are copied to the host and checked there (a bad label is an error naming
// its row), so the backward waits for its stream once.
#include <cuda_runtime.h>

#include "engine/base/host_sync_cuda.h"
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/svm_output-inl.h"

namespace tessera::op {

template <>
template <typename T>
const int64_t* SvmLabels<gpu>::Get(const NodeAttrs& attrs, const OpContext& ctx, const TBlob& label,
                                   int64_t rows, int64_t k, std::vector<int64_t>* keep) {
  const cudaStream_t s = ctx.run_ctx.get_stream<cudaStream_t>();
  std::vector<T> host(static_cast<size_t>(rows));
  TS_CUDA_CALL(
      cudaMemcpyAsync(host.data(), label.dptr_, rows * sizeof(T), cudaMemcpyDeviceToHost, s));
  WaitForStreamOnHost(s, "SVMOutput labels to the host");
  *keep = CheckedSvmLabels(attrs, host.data(), rows, k);
  int64_t* dev = ctx.requested.at(0).get_space_typed<int64_t>(keep->size());
  // From pageable memory the copy is staged before cudaMemcpyAsync returns.
  TS_CUDA_CALL(cudaMemcpyAsync(dev, keep->data(), keep->size() * sizeof(int64_t),
                               cudaMemcpyHostToDevice, s));
  return dev;
}

TS_REGISTER_OP(SVMOutput).set_attr<FCompute>(kFComputeGPU, SVMForward<gpu>);
TS_REGISTER_OP(_backward_SVMOutput).set_attr<FCompute>(kFComputeGPU, SVMBackward<gpu>);

}  // namespace tessera::op
