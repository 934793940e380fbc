// LRN on the GPU: the element kernels of lrn-inl.h on the op's stream, a
// thread per element (each computes the window sums it needs).
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/lrn-inl.h"

namespace tessera::op {

TS_REGISTER_OP(LRN).set_attr<FCompute>(kFComputeGPU, LRNForwardElems<gpu>);
TS_REGISTER_OP(_backward_LRN).set_attr<FCompute>(kFComputeGPU, LRNBackwardElems<gpu>);

}  // namespace tessera::op
