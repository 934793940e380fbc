// Pad on the GPU: the element kernels of pad-inl.h on the op's stream.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/pad-inl.h"

namespace tessera::op {

TS_REGISTER_OP(Pad).set_attr<FCompute>(kFComputeGPU, PadForward<gpu>);
TS_REGISTER_OP(_backward_Pad).set_attr<FCompute>(kFComputeGPU, PadBackward<gpu>);

}  // namespace tessera::op
