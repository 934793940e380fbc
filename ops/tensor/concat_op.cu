#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/concat_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(concat).set_attr<FCompute>(kFComputeGPU, ConcatCompute<gpu>);
TS_REGISTER_OP(_backward_concat).set_attr<FCompute>(kFComputeGPU, ConcatBackwardCompute<gpu>);
TS_REGISTER_OP(stack).set_attr<FCompute>(kFComputeGPU, StackCompute<gpu>);
TS_REGISTER_OP(split).set_attr<FCompute>(kFComputeGPU, SplitCompute<gpu>);

}  // namespace tessera::op
