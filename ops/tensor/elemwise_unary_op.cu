// GPU kernels of the unary elementwise operators.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/elemwise_unary_op-inl.h"

namespace tessera::op {

#define TS_REGISTER_UNARY_GPU(name, fn) \
  TS_REGISTER_OP(name).set_attr<FCompute>(kFComputeGPU, UnaryCompute<gpu, unary::fn>);
TS_ELEMWISE_UNARY_OPS(TS_REGISTER_UNARY_GPU)
#undef TS_REGISTER_UNARY_GPU

#define TS_REGISTER_UNARY_GRAD_GPU(name, fn) \
  TS_REGISTER_OP(name).set_attr<FCompute>(kFComputeGPU, UnaryGradCompute<gpu, unary::fn>);
TS_ELEMWISE_UNARY_GRAD_OPS(TS_REGISTER_UNARY_GRAD_GPU)
#undef TS_REGISTER_UNARY_GRAD_GPU

TS_REGISTER_OP(clip).set_attr<FCompute>(kFComputeGPU, ClipCompute<gpu>);
TS_REGISTER_OP(_backward_clip).set_attr<FCompute>(kFComputeGPU, ClipGradCompute<gpu>);
TS_REGISTER_OP(hard_sigmoid).set_attr<FCompute>(kFComputeGPU, HardSigmoidCompute<gpu>);
TS_REGISTER_OP(_backward_hard_sigmoid)
    .set_attr<FCompute>(kFComputeGPU, HardSigmoidGradCompute<gpu>);

}  // namespace tessera::op
