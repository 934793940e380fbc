#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/smooth_l1_op-inl.h"

namespace tessera::op {

TS_REGISTER_SIMPLE_OP(smooth_l1, gpu)
    .set_function(gpu::kDevice, SmoothL1Forward<gpu>, kNoInplace)
    .set_gradient(gpu::kDevice, SmoothL1BackwardUseIn<gpu>, kInplaceOutIn);

}  // namespace tessera::op
