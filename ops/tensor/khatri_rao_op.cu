// khatri_rao on the GPU: khatri_rao_op-inl.h's kernel on the op's stream.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/host_copy_cuda.h"
#include "ops/tensor/khatri_rao_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(khatri_rao).set_attr<FCompute>(kFComputeGPU, KhatriRaoCompute<gpu>);

}  // namespace tessera::op
