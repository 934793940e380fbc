// UpSampling on the GPU: the element kernels of upsampling-inl.h on the op's
// stream ('bilinear' runs Deconvolution's GPU kernel, an error naming it
// where there is none).
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/upsampling-inl.h"

namespace tessera::op {

TS_REGISTER_OP(UpSampling).set_attr<FCompute>(kFComputeGPU, UpSamplingForward<gpu>);
TS_REGISTER_OP(_backward_UpSampling).set_attr<FCompute>(kFComputeGPU, UpSamplingBackward<gpu>);

}  // namespace tessera::op
