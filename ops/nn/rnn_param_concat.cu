// _rnn_param_concat on the GPU: the kernels of rnn_param_concat-inl.h, a
// copy kernel per input on the op's stream.
#include "engine/op/kernel_launch_cuda.cuh"
#include "engine/op/op.h"
#include "ops/nn/rnn_param_concat-inl.h"

namespace tessera::op {

TS_REGISTER_OP(_rnn_param_concat).set_attr<FCompute>(kFComputeGPU, ParamConcatForward<gpu>);
TS_REGISTER_OP(_backward_rnn_param_concat)
    .set_attr<FCompute>(kFComputeGPU, ParamConcatBackward<gpu>);

}  // namespace tessera::op
