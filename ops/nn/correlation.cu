// Correlation on the GPU: the element kernels of correlation-inl.h on the
// op's stream.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/correlation-inl.h"

namespace tessera::op {

TS_REGISTER_OP(Correlation).set_attr<FCompute>(kFComputeGPU, CorrelationForward<gpu>);
TS_REGISTER_OP(_backward_Correlation).set_attr<FCompute>(kFComputeGPU, CorrelationBackward<gpu>);

}  // namespace tessera::op
