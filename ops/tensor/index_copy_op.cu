// contrib.index_copy on the GPU: the element kernels of index_copy_op-inl.h
// on the op's stream, after the indices are checked on the host.
#include <vector>

#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/host_copy_cuda.h"
#include "ops/tensor/index_copy_op-inl.h"

namespace tessera::op {

template <>
const int64_t* IntsToDevice<gpu>(const OpContext& ctx, const std::vector<int64_t>& host) {
  return CopyToTemp(ctx, host);
}

TS_REGISTER_OP(_contrib_index_copy).set_attr<FCompute>(kFComputeGPU, IndexCopyCompute<gpu>);
TS_REGISTER_OP(_backward_index_copy).set_attr<FCompute>(kFComputeGPU, IndexCopyBackward<gpu>);

}  // namespace tessera::op
