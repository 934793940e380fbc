#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/cast_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(Cast).set_attr<FCompute>(kFComputeGPU, CastCompute<gpu>);
TS_REGISTER_OP(_backward_cast).set_attr<FCompute>(kFComputeGPU, CastCompute<gpu>);
TS_REGISTER_OP(zeros_like).set_attr<FCompute>(kFComputeGPU, FillLikeCompute<gpu, 0>);
TS_REGISTER_OP(ones_like).set_attr<FCompute>(kFComputeGPU, FillLikeCompute<gpu, 1>);

}  // namespace tessera::op
