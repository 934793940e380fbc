// GPU kernel of add_n.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/elemwise_sum_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(add_n).set_attr<FCompute>(kFComputeGPU, AddNCompute<gpu>);

}  // namespace tessera::op
