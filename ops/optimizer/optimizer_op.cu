// The fused optimizer updates on the GPU: the element kernels of
// optimizer_op-inl.h launched on the op's stream.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/optimizer/optimizer_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(sgd_update).set_attr<FCompute>(kFComputeGPU, SGDUpdate<gpu>);
TS_REGISTER_OP(sgd_mom_update).set_attr<FCompute>(kFComputeGPU, SGDMomUpdate<gpu>);
TS_REGISTER_OP(nag_mom_update).set_attr<FCompute>(kFComputeGPU, NAGMomUpdate<gpu>);
TS_REGISTER_OP(adam_update).set_attr<FCompute>(kFComputeGPU, AdamUpdate<gpu>);
TS_REGISTER_OP(rmsprop_update).set_attr<FCompute>(kFComputeGPU, RMSPropUpdate<gpu>);
TS_REGISTER_OP(rmspropalex_update).set_attr<FCompute>(kFComputeGPU, RMSPropAlexUpdate<gpu>);
TS_REGISTER_OP(signsgd_update).set_attr<FCompute>(kFComputeGPU, SignSGDUpdate<gpu>);
TS_REGISTER_OP(signum_update).set_attr<FCompute>(kFComputeGPU, SignumUpdate<gpu>);
TS_REGISTER_OP(ftrl_update).set_attr<FCompute>(kFComputeGPU, FtrlUpdate<gpu>);
TS_REGISTER_OP(adamw_update).set_attr<FCompute>(kFComputeGPU, AdamWUpdate<gpu>);
TS_REGISTER_OP(lamb_update_phase1).set_attr<FCompute>(kFComputeGPU, LambPhase1<gpu>);
TS_REGISTER_OP(lamb_update_phase2).set_attr<FCompute>(kFComputeGPU, LambPhase2<gpu>);

}  // namespace tessera::op
