#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/shape_broadcast_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(broadcast_to).set_attr<FCompute>(kFComputeGPU, BroadcastCompute<gpu>);
TS_REGISTER_OP(broadcast_like).set_attr<FCompute>(kFComputeGPU, BroadcastCompute<gpu>);
TS_REGISTER_OP(broadcast_axis).set_attr<FCompute>(kFComputeGPU, BroadcastCompute<gpu>);
TS_REGISTER_OP(_backward_broadcast_to)
    .set_attr<FCompute>(kFComputeGPU, BroadcastBackwardCompute<gpu>);

}  // namespace tessera::op
