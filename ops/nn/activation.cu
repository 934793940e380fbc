// Activation and LeakyReLU on the GPU: the computes of activation-inl.h with
// xpu = gpu, on the op's stream. rrelu draws each element's slope from the
// op's Philox stream as the CPU does (four per block), so a seed gives the
// same slopes on either device.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/activation-inl.h"

namespace tessera::op {

TS_REGISTER_OP(LeakyReLU).set_attr<FCompute>(kFComputeGPU, LeakyForward<gpu>);
TS_REGISTER_OP(_backward_LeakyReLU).set_attr<FCompute>(kFComputeGPU, LeakyBackward<gpu>);
TS_REGISTER_OP(Activation).set_attr<FCompute>(kFComputeGPU, ActForward<gpu>);
TS_REGISTER_OP(_backward_Activation).set_attr<FCompute>(kFComputeGPU, ActBackward<gpu>);

}  // namespace tessera::op
