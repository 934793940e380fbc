#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/shape_array_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(shape_array).set_attr<FCompute>(kFComputeGPU, ShapeArrayCompute<gpu, false>);
TS_REGISTER_OP(size_array).set_attr<FCompute>(kFComputeGPU, ShapeArrayCompute<gpu, true>);

}  // namespace tessera::op
