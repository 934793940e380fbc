// GridGenerator, BilinearSampler and SpatialTransformer on the GPU: the
// element kernels of spatial_transformer-inl.h on the op's stream.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/spatial_transformer-inl.h"

namespace tessera::op {

TS_REGISTER_OP(BilinearSampler).set_attr<FCompute>(kFComputeGPU, SamplerForward<gpu>);
TS_REGISTER_OP(_backward_BilinearSampler).set_attr<FCompute>(kFComputeGPU, SamplerBackward<gpu>);
TS_REGISTER_OP(GridGenerator).set_attr<FCompute>(kFComputeGPU, GridCompute<gpu, true>);
TS_REGISTER_OP(_backward_GridGenerator).set_attr<FCompute>(kFComputeGPU, GridCompute<gpu, false>);
TS_REGISTER_OP(SpatialTransformer).set_attr<FCompute>(kFComputeGPU, TransformerForward<gpu>);
TS_REGISTER_OP(_backward_SpatialTransformer)
    .set_attr<FCompute>(kFComputeGPU, TransformerBackward<gpu>);

}  // namespace tessera::op
