#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/depth_space_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(depth_to_space).set_attr<FCompute>(kFComputeGPU, DepthSpaceCompute<gpu, true>);
TS_REGISTER_OP(space_to_depth).set_attr<FCompute>(kFComputeGPU, DepthSpaceCompute<gpu, false>);

}  // namespace tessera::op
