// linalg.gemm and linalg.gemm2 on the GPU: cuBLAS's strided batches
// (gemm_gpu.h) on the op's stream, and the element kernels of
// linalg_gemm_op-inl.h.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/linalg_gemm_op-inl.h"
#include "ops/tensor/matrix_product_cuda.h"

namespace tessera::op {

TS_REGISTER_OP(_linalg_gemm).set_attr<FCompute>(kFComputeGPU, GemmForward<gpu, LinalgGemmParam>);
TS_REGISTER_OP(_backward_linalg_gemm)
    .set_attr<FCompute>(kFComputeGPU, GemmBackward<gpu, LinalgGemmParam>);
TS_REGISTER_OP(_linalg_gemm2).set_attr<FCompute>(kFComputeGPU, GemmForward<gpu, LinalgGemm2Param>);
TS_REGISTER_OP(_backward_linalg_gemm2)
    .set_attr<FCompute>(kFComputeGPU, GemmBackward<gpu, LinalgGemm2Param>);

}  // namespace tessera::op
