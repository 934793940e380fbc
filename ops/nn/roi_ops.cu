// ROIPooling and contrib.ROIAlign on the GPU: the boxes are copied to the
// host and their images checked there (the op waits for its stream once),
// then the element kernels of roi_ops-inl.h run on the op's stream.
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "engine/base/cuda_utils.h"
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/roi_ops-inl.h"

namespace tessera::op {

template <>
template <typename T>
const int64_t* RoiBoxes<gpu>::Images(const NodeAttrs& attrs, const OpContext& ctx, const RoiGeom& g,
                                     const TBlob& rois) {
  cudaStream_t stream = ctx.run_ctx.get_stream<cudaStream_t>();
  std::vector<T> host(static_cast<size_t>(rois.Size()));
  TS_CUDA_CALL(
      cudaMemcpyAsync(host.data(), rois.dptr_, rois.bytes(), cudaMemcpyDeviceToHost, stream));
  TS_CUDA_CALL(cudaStreamSynchronize(stream));
  const std::vector<int64_t> img = BoxImages(attrs, g, host.data());
  int64_t* dev = ctx.requested.at(0).get_space_typed<int64_t>(std::max<size_t>(img.size(), 1));
  // From pageable memory the copy is staged before cudaMemcpyAsync returns.
  TS_CUDA_CALL(cudaMemcpyAsync(dev, img.data(), img.size() * sizeof(int64_t),
                               cudaMemcpyHostToDevice, stream));
  return dev;
}

TS_REGISTER_OP(ROIPooling).set_attr<FCompute>(kFComputeGPU, RoiPoolForward<gpu>);
TS_REGISTER_OP(_backward_ROIPooling).set_attr<FCompute>(kFComputeGPU, RoiPoolBackward<gpu>);
TS_REGISTER_OP(_contrib_ROIAlign).set_attr<FCompute>(kFComputeGPU, RoiAlignCompute<gpu, true>);
TS_REGISTER_OP(_backward_contrib_ROIAlign)
    .set_attr<FCompute>(kFComputeGPU, RoiAlignCompute<gpu, false>);

}  // namespace tessera::op
