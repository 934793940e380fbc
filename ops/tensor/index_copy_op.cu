// contrib.index_copy on the GPU: the element kernels of index_copy_op-inl.h
// on the op's stream, after the indices are checked on the host.
#include <cuda_runtime.h>

#include <vector>

#include "engine/base/cuda_utils.h"
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/index_copy_op-inl.h"

namespace tessera::op {

template <>
const int64_t* IntsToDevice<gpu>(const OpContext& ctx, const std::vector<int64_t>& host) {
  int64_t* dev = ctx.requested.at(0).get_space_typed<int64_t>(host.empty() ? 1 : host.size());
  // From pageable memory the copy is staged before cudaMemcpyAsync returns.
  TS_CUDA_CALL(cudaMemcpyAsync(dev, host.data(), host.size() * sizeof(int64_t),
                               cudaMemcpyHostToDevice, ctx.run_ctx.get_stream<cudaStream_t>()));
  return dev;
}

TS_REGISTER_OP(_contrib_index_copy).set_attr<FCompute>(kFComputeGPU, IndexCopyCompute<gpu>);
TS_REGISTER_OP(_backward_index_copy).set_attr<FCompute>(kFComputeGPU, IndexCopyBackward<gpu>);

}  // namespace tessera::op
