// The mixed-precision and multi-weight SGD updates on the GPU: the step
// kernel of sgd_multi_op-inl.h on the op's stream, one launch per weight.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/optimizer/sgd_multi_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(mp_sgd_update).set_attr<FCompute>(kFComputeGPU, MPSgdCompute<gpu, false>);
TS_REGISTER_OP(mp_sgd_mom_update).set_attr<FCompute>(kFComputeGPU, MPSgdCompute<gpu, true>);
TS_REGISTER_OP(multi_sgd_update)
    .set_attr<FCompute>(kFComputeGPU, MultiSgdCompute<gpu, false, false>);
TS_REGISTER_OP(multi_sgd_mom_update)
    .set_attr<FCompute>(kFComputeGPU, MultiSgdCompute<gpu, true, false>);
TS_REGISTER_OP(multi_mp_sgd_update)
    .set_attr<FCompute>(kFComputeGPU, MultiSgdCompute<gpu, false, true>);
TS_REGISTER_OP(multi_mp_sgd_mom_update)
    .set_attr<FCompute>(kFComputeGPU, MultiSgdCompute<gpu, true, true>);

}  // namespace tessera::op
