#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/init_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(_zeros).set_attr<FCompute>(kFComputeGPU, FillConstantCompute<gpu, 0>);
TS_REGISTER_OP(_ones).set_attr<FCompute>(kFComputeGPU, FillConstantCompute<gpu, 1>);
TS_REGISTER_OP(_full).set_attr<FCompute>(kFComputeGPU, FullCompute<gpu>);
TS_REGISTER_OP(_empty).set_attr<FCompute>(kFComputeGPU, EmptyCompute);
TS_REGISTER_OP(_arange).set_attr<FCompute>(kFComputeGPU, ArangeCompute<gpu>);
TS_REGISTER_OP(_eye).set_attr<FCompute>(kFComputeGPU, EyeCompute<gpu>);
TS_REGISTER_OP(_linspace).set_attr<FCompute>(kFComputeGPU, LinspaceCompute<gpu>);

}  // namespace tessera::op
