#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/indexing_where_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(where).set_attr<FCompute>(kFComputeGPU, WhereCompute<gpu>);
TS_REGISTER_OP(_backward_where).set_attr<FCompute>(kFComputeGPU, WhereBackwardCompute<gpu>);
TS_REGISTER_OP(one_hot).set_attr<FCompute>(kFComputeGPU, OneHotCompute<gpu>);

}  // namespace tessera::op
