// linalg.inverse, linalg.det and linalg.slogdet on the GPU: cuBLAS's batched
// LU routines and products, and the element kernels of linalg_lu_op-inl.h,
// on the op's stream (inverse waits for it once, to check for singular
// matrices; det's backward to check the pivots).
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/host_copy_cuda.h"
#include "ops/tensor/linalg_lu_op-inl.h"
#include "ops/tensor/matrix_product_cuda.h"

namespace tessera::op {

TS_REGISTER_OP(_linalg_inverse).set_attr<FCompute>(kFComputeGPU, InverseForward<gpu>);
TS_REGISTER_OP(_backward_linalg_inverse).set_attr<FCompute>(kFComputeGPU, InverseBackward<gpu>);
TS_REGISTER_OP(_linalg_det).set_attr<FCompute>(kFComputeGPU, DetForward<false, gpu>);
TS_REGISTER_OP(_backward_linalg_det).set_attr<FCompute>(kFComputeGPU, DetBackward<false, gpu>);
TS_REGISTER_OP(_linalg_slogdet).set_attr<FCompute>(kFComputeGPU, DetForward<true, gpu>);
TS_REGISTER_OP(_backward_linalg_slogdet).set_attr<FCompute>(kFComputeGPU, DetBackward<true, gpu>);

}  // namespace tessera::op
