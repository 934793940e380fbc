// GPU kernels of the scalar forms of the binary operators.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/elemwise_scalar_op-inl.h"

namespace tessera::op {

#define TS_REGISTER_SCALAR_GPU(name, fn, reverse) \
  TS_REGISTER_OP(name).set_attr<FCompute>(kFComputeGPU, ScalarCompute<gpu, binary::fn, reverse>);
TS_SCALAR_OPS(TS_REGISTER_SCALAR_GPU)
#undef TS_REGISTER_SCALAR_GPU

#define TS_REGISTER_SCALAR_GRAD_GPU(name, grad, reverse) \
  TS_REGISTER_OP(name).set_attr<FCompute>(kFComputeGPU,  \
                                          ScalarGradCompute<gpu, binary::grad, reverse>);
TS_SCALAR_GRAD_OPS(TS_REGISTER_SCALAR_GRAD_GPU)
#undef TS_REGISTER_SCALAR_GRAD_GPU

}  // namespace tessera::op
