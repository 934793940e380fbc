#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/slice_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(slice).set_attr<FCompute>(kFComputeGPU, SliceCompute<gpu, SliceLayout>);
TS_REGISTER_OP(slice_axis).set_attr<FCompute>(kFComputeGPU, SliceCompute<gpu, SliceAxisLayout>);
TS_REGISTER_OP(slice_like).set_attr<FCompute>(kFComputeGPU, SliceCompute<gpu, CornerLayout>);
TS_REGISTER_OP(_backward_slice)
    .set_attr<FCompute>(kFComputeGPU, SliceBackwardCompute<gpu, SliceLayout>);
TS_REGISTER_OP(_backward_slice_axis)
    .set_attr<FCompute>(kFComputeGPU, SliceBackwardCompute<gpu, SliceAxisLayout>);
TS_REGISTER_OP(_backward_slice_like)
    .set_attr<FCompute>(kFComputeGPU, SliceBackwardCompute<gpu, CornerLayout>);

}  // namespace tessera::op
