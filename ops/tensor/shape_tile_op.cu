#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/shape_tile_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(tile).set_attr<FCompute>(kFComputeGPU, TileCompute<gpu>);
TS_REGISTER_OP(repeat).set_attr<FCompute>(kFComputeGPU, RepeatCompute<gpu>);
TS_REGISTER_OP(flip).set_attr<FCompute>(kFComputeGPU, FlipCompute<gpu>);
TS_REGISTER_OP(_backward_tile).set_attr<FCompute>(kFComputeGPU, TileBackwardCompute<gpu>);
TS_REGISTER_OP(_backward_repeat).set_attr<FCompute>(kFComputeGPU, RepeatBackwardCompute<gpu>);

}  // namespace tessera::op
