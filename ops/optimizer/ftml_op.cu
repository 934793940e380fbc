// ftml_update on the GPU: the element kernel of ftml_op-inl.h on the op's
// stream.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/optimizer/ftml_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(ftml_update).set_attr<FCompute>(kFComputeGPU, FTMLUpdate<gpu>);

}  // namespace tessera::op
