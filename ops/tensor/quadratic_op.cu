#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/quadratic_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(quadratic).set_attr<FCompute>(kFComputeGPU, QuadraticForward<gpu>);
TS_REGISTER_OP(_backward_quadratic).set_attr<FCompute>(kFComputeGPU, QuadraticBackward<gpu>);

}  // namespace tessera::op
