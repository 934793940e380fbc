// contrib.box_iou and contrib.box_nms on the GPU: box_ops-inl.h's kernels on
// the op's stream (box_nms a thread per image: correct, not yet fast).
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/box_ops-inl.h"

namespace tessera::op {

TS_REGISTER_OP(_contrib_box_iou).set_attr<FCompute>(kFComputeGPU, BoxIouCompute<gpu>);
TS_REGISTER_OP(_contrib_box_nms).set_attr<FCompute>(kFComputeGPU, BoxNmsForward<gpu>);
TS_REGISTER_OP(_backward_contrib_box_nms).set_attr<FCompute>(kFComputeGPU, BoxNmsBackward<gpu>);

}  // namespace tessera::op
