// linalg.potrf, potri, gelqf and syevd on the GPU: cuSOLVER's routines,
// cuBLAS's products and solves, and the element kernels of
// linalg_factor_op-inl.h, on the op's stream (each forward waits for it
// once, to check the routines' info values).
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/host_copy_cuda.h"
#include "ops/tensor/linalg_factor_op-inl.h"
#include "ops/tensor/matrix_product_cuda.h"

namespace tessera::op {

TS_REGISTER_OP(_linalg_potrf).set_attr<FCompute>(kFComputeGPU, CholeskyForward<false, gpu>);
TS_REGISTER_OP(_backward_linalg_potrf).set_attr<FCompute>(kFComputeGPU, PotrfBackward<gpu>);
TS_REGISTER_OP(_linalg_potri).set_attr<FCompute>(kFComputeGPU, CholeskyForward<true, gpu>);
TS_REGISTER_OP(_backward_linalg_potri).set_attr<FCompute>(kFComputeGPU, PotriBackward<gpu>);
TS_REGISTER_OP(_linalg_gelqf).set_attr<FCompute>(kFComputeGPU, GelqfForward<gpu>);
TS_REGISTER_OP(_backward_linalg_gelqf).set_attr<FCompute>(kFComputeGPU, GelqfBackward<gpu>);
TS_REGISTER_OP(_linalg_syevd).set_attr<FCompute>(kFComputeGPU, SyevdForward<gpu>);
TS_REGISTER_OP(_backward_linalg_syevd).set_attr<FCompute>(kFComputeGPU, SyevdBackward<gpu>);

}  // namespace tessera::op
