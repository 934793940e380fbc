// Dropout on the GPU: the element kernels of dropout-inl.h on the op's
// stream, drawing the same Philox values per element as the CPU.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/dropout-inl.h"

namespace tessera::op {

TS_REGISTER_OP(Dropout).set_attr<FCompute>(kFComputeGPU, DropoutForward<gpu>);
TS_REGISTER_OP(_backward_Dropout).set_attr<FCompute>(kFComputeGPU, DropoutBackward<gpu>);

}  // namespace tessera::op
