// The regression output layers on the GPU: the element kernels of
// regression_output-inl.h on the op's stream.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/regression_output-inl.h"

namespace tessera::op {

TS_REGISTER_OP(LinearRegressionOutput)
    .set_attr<FCompute>(kFComputeGPU, RegressionForward<gpu, kLinear>);
TS_REGISTER_OP(MAERegressionOutput).set_attr<FCompute>(kFComputeGPU, RegressionForward<gpu, kMAE>);
TS_REGISTER_OP(LogisticRegressionOutput)
    .set_attr<FCompute>(kFComputeGPU, RegressionForward<gpu, kLogistic>);
TS_REGISTER_OP(_backward_linear_reg_out)
    .set_attr<FCompute>(kFComputeGPU, RegressionBackward<gpu, kLinear>);
TS_REGISTER_OP(_backward_mae_reg_out)
    .set_attr<FCompute>(kFComputeGPU, RegressionBackward<gpu, kMAE>);
TS_REGISTER_OP(_backward_logistic_reg_out)
    .set_attr<FCompute>(kFComputeGPU, RegressionBackward<gpu, kLogistic>);

}  // namespace tessera::op
