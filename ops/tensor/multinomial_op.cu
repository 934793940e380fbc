// _sample_multinomial on the GPU: the element kernels of multinomial_op-inl.h
// on the op's stream, after the host checks.
#include <vector>

#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/host_copy_cuda.h"
#include "ops/tensor/multinomial_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(_sample_multinomial).set_attr<FCompute>(kFComputeGPU, MultinomialCompute<gpu>);
TS_REGISTER_OP(_backward_sample_multinomial)
    .set_attr<FCompute>(kFComputeGPU, MultinomialBackward<gpu>);

}  // namespace tessera::op
