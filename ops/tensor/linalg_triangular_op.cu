// linalg.trmm, linalg.trsm and linalg.syrk on the GPU: cuBLAS (products and
// triangular solves) and the element kernels of linalg_triangular_op-inl.h
// on the op's stream.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/linalg_triangular_op-inl.h"
#include "ops/tensor/matrix_product_cuda.h"

namespace tessera::op {

TS_REGISTER_OP(_linalg_trmm).set_attr<FCompute>(kFComputeGPU, TriangForward<false, gpu>);
TS_REGISTER_OP(_backward_linalg_trmm).set_attr<FCompute>(kFComputeGPU, TriangBackward<false, gpu>);
TS_REGISTER_OP(_linalg_trsm).set_attr<FCompute>(kFComputeGPU, TriangForward<true, gpu>);
TS_REGISTER_OP(_backward_linalg_trsm).set_attr<FCompute>(kFComputeGPU, TriangBackward<true, gpu>);
TS_REGISTER_OP(_linalg_syrk).set_attr<FCompute>(kFComputeGPU, SyrkForward<gpu>);
TS_REGISTER_OP(_backward_linalg_syrk).set_attr<FCompute>(kFComputeGPU, SyrkBackward<gpu>);

}  // namespace tessera::op
