// SSD's anchor ops on the GPU: multibox_ops-inl.h's kernels on the op's
// stream (the target and the detection a thread per image).
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/multibox_ops-inl.h"
#include "ops/tensor/host_copy_cuda.h"

namespace tessera::op {

TS_REGISTER_OP(_contrib_MultiBoxPrior).set_attr<FCompute>(kFComputeGPU, PriorForward<gpu>);
TS_REGISTER_OP(_contrib_MultiBoxTarget).set_attr<FCompute>(kFComputeGPU, TargetForward<gpu>);
TS_REGISTER_OP(_contrib_MultiBoxDetection).set_attr<FCompute>(kFComputeGPU, DetectionForward<gpu>);

}  // namespace tessera::op
