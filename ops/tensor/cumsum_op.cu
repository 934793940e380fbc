// cumsum on the GPU: one thread per running line (cumsum_op-inl.h).
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/cumsum_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(_np_cumsum).set_attr<FCompute>(kFComputeGPU, CumsumCompute<gpu, false>);
TS_REGISTER_OP(_backward_np_cumsum).set_attr<FCompute>(kFComputeGPU, CumsumCompute<gpu, true>);

}  // namespace tessera::op
