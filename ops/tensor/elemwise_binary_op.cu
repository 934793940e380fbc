// GPU kernels of the same-shape binary operators.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/elemwise_binary_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(elemwise_add).set_attr<FCompute>(kFComputeGPU, BinaryCompute<gpu, binary::add>);
TS_REGISTER_OP(elemwise_sub).set_attr<FCompute>(kFComputeGPU, BinaryCompute<gpu, binary::sub>);
TS_REGISTER_OP(elemwise_mul).set_attr<FCompute>(kFComputeGPU, BinaryCompute<gpu, binary::mul>);
TS_REGISTER_OP(elemwise_div).set_attr<FCompute>(kFComputeGPU, BinaryCompute<gpu, binary::div>);

TS_REGISTER_OP(_backward_add)
    .set_attr<FCompute>(kFComputeGPU, BinaryGradCompute<gpu, binary::one, binary::one>);
TS_REGISTER_OP(_backward_sub)
    .set_attr<FCompute>(kFComputeGPU, BinaryGradCompute<gpu, binary::one, binary::minus_one>);
TS_REGISTER_OP(_backward_mul)
    .set_attr<FCompute>(kFComputeGPU, BinaryGradCompute<gpu, binary::mul_lgrad, binary::mul_rgrad>);
TS_REGISTER_OP(_backward_div)
    .set_attr<FCompute>(kFComputeGPU, BinaryGradCompute<gpu, binary::div_lgrad, binary::div_rgrad>);

}  // namespace tessera::op
