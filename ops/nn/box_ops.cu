// contrib.box_iou on the GPU: the element kernel of box_ops-inl.h on the
// op's stream (box_nms stays on the CPU).
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/box_ops-inl.h"

namespace tessera::op {

TS_REGISTER_OP(_contrib_box_iou).set_attr<FCompute>(kFComputeGPU, BoxIouCompute<gpu>);

}  // namespace tessera::op
