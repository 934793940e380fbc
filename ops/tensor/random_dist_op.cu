// MXNet's other samplers on the GPU: the element kernels of
// random_dist_op-inl.h on the op's stream (the _sample_* parameters checked
// on the host first).
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/host_copy_cuda.h"
#include "ops/tensor/random_dist_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(_random_exponential)
    .set_attr<FCompute>(kFComputeGPU, RandomDistCompute<kExponential, gpu>);
TS_REGISTER_OP(_random_gamma).set_attr<FCompute>(kFComputeGPU, RandomDistCompute<kGamma, gpu>);
TS_REGISTER_OP(_random_poisson).set_attr<FCompute>(kFComputeGPU, RandomDistCompute<kPoisson, gpu>);
TS_REGISTER_OP(_random_negative_binomial)
    .set_attr<FCompute>(kFComputeGPU, RandomDistCompute<kNegBinomial, gpu>);
TS_REGISTER_OP(_random_generalized_negative_binomial)
    .set_attr<FCompute>(kFComputeGPU, RandomDistCompute<kGenNegBinomial, gpu>);

TS_REGISTER_OP(_sample_uniform).set_attr<FCompute>(kFComputeGPU, SampleCompute<kUniformDist, gpu>);
TS_REGISTER_OP(_sample_normal).set_attr<FCompute>(kFComputeGPU, SampleCompute<kNormalDist, gpu>);
TS_REGISTER_OP(_sample_exponential)
    .set_attr<FCompute>(kFComputeGPU, SampleCompute<kExponential, gpu>);
TS_REGISTER_OP(_sample_gamma).set_attr<FCompute>(kFComputeGPU, SampleCompute<kGamma, gpu>);
TS_REGISTER_OP(_sample_poisson).set_attr<FCompute>(kFComputeGPU, SampleCompute<kPoisson, gpu>);
TS_REGISTER_OP(_sample_negative_binomial)
    .set_attr<FCompute>(kFComputeGPU, SampleCompute<kNegBinomial, gpu>);
TS_REGISTER_OP(_sample_generalized_negative_binomial)
    .set_attr<FCompute>(kFComputeGPU, SampleCompute<kGenNegBinomial, gpu>);

}  // namespace tessera::op
