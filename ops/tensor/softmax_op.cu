// GPU registrations of softmax, log_softmax, softmin and their gradients
// (the kernels are in softmax_op_gpu.cuh).
#include "ops/tensor/softmax_op_gpu.cuh"

namespace tessera::op {

TS_REGISTER_OP(softmax).set_attr<FCompute>(kFComputeGPU, SoftmaxCompute<gpu, false, false>);
TS_REGISTER_OP(log_softmax).set_attr<FCompute>(kFComputeGPU, SoftmaxCompute<gpu, true, false>);
TS_REGISTER_OP(softmin).set_attr<FCompute>(kFComputeGPU, SoftmaxCompute<gpu, false, true>);
TS_REGISTER_OP(_backward_softmax)
    .set_attr<FCompute>(kFComputeGPU, SoftmaxBackwardCompute<gpu, false, false>);
TS_REGISTER_OP(_backward_log_softmax)
    .set_attr<FCompute>(kFComputeGPU, SoftmaxBackwardCompute<gpu, true, false>);
TS_REGISTER_OP(_backward_softmin)
    .set_attr<FCompute>(kFComputeGPU, SoftmaxBackwardCompute<gpu, false, true>);

}  // namespace tessera::op
