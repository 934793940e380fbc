#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/shape_reshape_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(reshape).set_attr<FCompute>(kFComputeGPU, ReshapeLikeCompute<gpu>);
TS_REGISTER_OP(flatten).set_attr<FCompute>(kFComputeGPU, ReshapeLikeCompute<gpu>);
TS_REGISTER_OP(expand_dims).set_attr<FCompute>(kFComputeGPU, ReshapeLikeCompute<gpu>);
TS_REGISTER_OP(squeeze).set_attr<FCompute>(kFComputeGPU, ReshapeLikeCompute<gpu>);
TS_REGISTER_OP(reshape_like).set_attr<FCompute>(kFComputeGPU, ReshapeLikeCompute<gpu>);
TS_REGISTER_OP(_backward_reshape).set_attr<FCompute>(kFComputeGPU, ReshapeLikeCompute<gpu>);

}  // namespace tessera::op
