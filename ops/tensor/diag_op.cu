#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/diag_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(diag).set_attr<FCompute>(kFComputeGPU, DiagCompute<gpu>);
TS_REGISTER_OP(_backward_diag).set_attr<FCompute>(kFComputeGPU, DiagGradCompute<gpu>);

}  // namespace tessera::op
