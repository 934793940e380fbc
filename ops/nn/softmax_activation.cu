// SoftmaxActivation on the GPU: the GPU softmax (softmax_op_gpu.cuh) over
// each instance or each position's channels.
#include "ops/nn/softmax_activation-inl.h"
#include "ops/tensor/softmax_op_gpu.cuh"

namespace tessera::op {

TS_REGISTER_OP(SoftmaxActivation).set_attr<FCompute>(kFComputeGPU, SoftmaxActivationForward<gpu>);
TS_REGISTER_OP(_backward_SoftmaxActivation)
    .set_attr<FCompute>(kFComputeGPU, SoftmaxActivationBackward<gpu>);

}  // namespace tessera::op
