// contrib.AdaptiveAvgPooling2D on the GPU: the element kernels of
// adaptive_avg_pooling-inl.h on the op's stream.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/adaptive_avg_pooling-inl.h"

namespace tessera::op {

TS_REGISTER_OP(_contrib_AdaptiveAvgPooling2D)
    .set_attr<FCompute>(kFComputeGPU, AdaptiveCompute<gpu, true>);
TS_REGISTER_OP(_backward_contrib_AdaptiveAvgPooling2D)
    .set_attr<FCompute>(kFComputeGPU, AdaptiveCompute<gpu, false>);

}  // namespace tessera::op
