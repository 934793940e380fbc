// sort, argsort and topk on the GPU: the bitonic network of
// sort_bitonic-inl.h on the op's stream (its pairs in the op's temp space);
// the gradient of the kept values a row per thread, as on the CPU.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/sort_bitonic-inl.h"

namespace tessera::op {
namespace {

void SortComputeGpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const SortSpec s = SortSpecOf(attrs);
  const SortRows g = SortRowsOf(attrs, s, in[0].shape());
  SwitchSortTypes(attrs, in[0].dtype(), s, [&](auto tag, auto itag) {
    using T = typename decltype(tag)::type;
    using I = typename decltype(itag)::type;
    BitonicSortRows<gpu, T, I>(ctx, g, s, in[0].dptr<T>(), SortOutputsOf<T, I>(s, req, out),
                               out[0]);
  });
}

}  // namespace

TS_REGISTER_OP(sort).set_attr<FCompute>(kFComputeGPU, SortComputeGpu);
TS_REGISTER_OP(argsort).set_attr<FCompute>(kFComputeGPU, SortComputeGpu);
TS_REGISTER_OP(topk).set_attr<FCompute>(kFComputeGPU, SortComputeGpu);
TS_REGISTER_OP(_backward_sort).set_attr<FCompute>(kFComputeGPU, SortBackwardCompute<gpu>);

}  // namespace tessera::op
