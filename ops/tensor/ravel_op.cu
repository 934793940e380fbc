// ravel_multi_index and unravel_index on the GPU: ravel_op-inl.h's kernels
// on the op's stream, after the host checks.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/host_copy_cuda.h"
#include "ops/tensor/ravel_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(_ravel_multi_index).set_attr<FCompute>(kFComputeGPU, RavelCompute<true, gpu>);
TS_REGISTER_OP(_unravel_index).set_attr<FCompute>(kFComputeGPU, RavelCompute<false, gpu>);

}  // namespace tessera::op
