// Crop on the GPU: the gather kernels of crop-inl.h.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/crop-inl.h"

namespace tessera::op {

TS_REGISTER_OP(Crop).set_attr<FCompute>(kFComputeGPU, CropForward<gpu>);
TS_REGISTER_OP(_backward_Crop).set_attr<FCompute>(kFComputeGPU, CropBackward<gpu>);

}  // namespace tessera::op
