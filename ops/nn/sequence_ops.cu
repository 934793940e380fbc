// The sequence ops on the GPU: the element kernels of sequence_ops-inl.h.
// The lengths are copied to the host and checked there (an op with
// sequence_length therefore waits for its stream once), then uploaded as
// int64 into the op's temp space.
#include <cuda_runtime.h>

#include "engine/base/host_sync_cuda.h"
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/sequence_ops-inl.h"

namespace tessera::op {

template <>
struct SeqLengths<gpu> {
  static const int64_t* Get(const OpContext& ctx, const NodeAttrs& attrs, const SeqGeom& g,
                            const std::vector<TBlob>& in, size_t index, int64_t min_len,
                            std::vector<int64_t>* keep) {
    const cudaStream_t s = ctx.run_ctx.get_stream<cudaStream_t>();
    const bool given = SeqParams(attrs).use_sequence_length;
    std::vector<uint8_t> host;
    if (given) {
      const TBlob& b = in[index];
      host.resize(b.Size() * DTypeSize(b.dtype()));
      TS_CUDA_CALL(cudaMemcpyAsync(host.data(), b.dptr_, host.size(), cudaMemcpyDeviceToHost, s));
      WaitForStreamOnHost(s, "sequence lengths to the host");
    }
    *keep = CheckedLengths(attrs, g, given ? in[index].dtype() : DType::kInt64,
                           given ? host.data() : nullptr, min_len);
    int64_t* dev = ctx.requested.at(0).get_space_typed<int64_t>(std::max<size_t>(keep->size(), 1));
    TS_CUDA_CALL(cudaMemcpyAsync(dev, keep->data(), keep->size() * sizeof(int64_t),
                                 cudaMemcpyHostToDevice, s));
    // From pageable memory the copy is staged before cudaMemcpyAsync returns.
    return dev;
  }
};

TS_REGISTER_OP(SequenceMask).set_attr<FCompute>(kFComputeGPU, MaskCompute<gpu>);
TS_REGISTER_OP(_backward_SequenceMask).set_attr<FCompute>(kFComputeGPU, MaskCompute<gpu>);
TS_REGISTER_OP(SequenceLast).set_attr<FCompute>(kFComputeGPU, LastCompute<gpu>);
TS_REGISTER_OP(_backward_SequenceLast).set_attr<FCompute>(kFComputeGPU, LastBackward<gpu>);
TS_REGISTER_OP(SequenceReverse).set_attr<FCompute>(kFComputeGPU, ReverseCompute<gpu>);
TS_REGISTER_OP(_backward_SequenceReverse).set_attr<FCompute>(kFComputeGPU, ReverseCompute<gpu>);

}  // namespace tessera::op
