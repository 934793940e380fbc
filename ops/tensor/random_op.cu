#include "engine/base/cuda_utils.h"
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/random_op-inl.h"

namespace tessera::op {

namespace {

// The permutation is drawn on the host (as on the CPU, so both devices give
// the same shuffle) and copied into the op's temp space. The copy is from
// pageable memory, so it has left `perm` when cudaMemcpyAsync returns.
void ShuffleComputeGpu(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const int64_t n = in[0].shape()[0];
  const std::vector<int64_t> perm = ShufflePermutation(ctx.requested.at(0).get_random(), n);
  auto* dperm = ctx.requested.at(1).get_space_typed<int64_t>(static_cast<size_t>(n));
  TS_CUDA_CALL(cudaMemcpyAsync(dperm, perm.data(), perm.size() * sizeof(int64_t),
                               cudaMemcpyHostToDevice, ctx.get_stream<cudaStream_t>()));
  ShuffleGather<gpu>(ctx, in[0], req[0], out[0], dperm);
}

}  // namespace

TS_REGISTER_OP(_random_uniform).set_attr<FCompute>(kFComputeGPU, UniformCompute<gpu>);
TS_REGISTER_OP(_random_normal).set_attr<FCompute>(kFComputeGPU, NormalCompute<gpu>);
TS_REGISTER_OP(_random_randint).set_attr<FCompute>(kFComputeGPU, RandIntCompute<gpu>);
TS_REGISTER_OP(_shuffle).set_attr<FCompute>(kFComputeGPU, ShuffleComputeGpu);

}  // namespace tessera::op
