// contrib.Proposal on the GPU: proposal-inl.h's kernel on the op's stream (a
// thread per image), after the host checks of the image sizes.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/proposal-inl.h"
#include "ops/tensor/host_copy_cuda.h"

namespace tessera::op {

TS_REGISTER_OP(_contrib_Proposal).set_attr<FCompute>(kFComputeGPU, ProposalForward<gpu>);

}  // namespace tessera::op
