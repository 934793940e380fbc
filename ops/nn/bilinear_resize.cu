// contrib.BilinearResize2D on the GPU: the element kernels of
// bilinear_resize-inl.h on the op's stream.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/bilinear_resize-inl.h"

namespace tessera::op {

TS_REGISTER_OP(_contrib_BilinearResize2D)
    .set_attr<FCompute>(kFComputeGPU, ResizeCompute<gpu, true>);
TS_REGISTER_OP(_backward_contrib_BilinearResize2D)
    .set_attr<FCompute>(kFComputeGPU, ResizeCompute<gpu, false>);

}  // namespace tessera::op
