// The diagonal and triangle ops on the GPU: linalg_diag_op-inl.h's kernels on
// the op's stream.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/linalg_diag_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(_linalg_extractdiag)
    .set_attr<FCompute>(kFComputeGPU, DiagTrianCompute<false, true, gpu>);
TS_REGISTER_OP(_linalg_makediag)
    .set_attr<FCompute>(kFComputeGPU, DiagTrianCompute<false, false, gpu>);
TS_REGISTER_OP(_linalg_extracttrian)
    .set_attr<FCompute>(kFComputeGPU, DiagTrianCompute<true, true, gpu>);
TS_REGISTER_OP(_linalg_maketrian)
    .set_attr<FCompute>(kFComputeGPU, DiagTrianCompute<true, false, gpu>);
TS_REGISTER_OP(_linalg_sumlogdiag).set_attr<FCompute>(kFComputeGPU, SumLogDiagForward<gpu>);
TS_REGISTER_OP(_backward_linalg_sumlogdiag)
    .set_attr<FCompute>(kFComputeGPU, SumLogDiagBackward<gpu>);

}  // namespace tessera::op
