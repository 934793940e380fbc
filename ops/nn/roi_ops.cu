// ROIPooling and contrib.ROIAlign on the GPU: the boxes are copied to the
// host and their images checked there (the op waits for its stream once),
// then the element kernels of roi_ops-inl.h run on the op's stream.
#include <vector>

#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/roi_ops-inl.h"
#include "ops/tensor/host_copy_cuda.h"

namespace tessera::op {

template <>
template <typename T>
const int64_t* RoiBoxes<gpu>::Images(const NodeAttrs& attrs, const OpContext& ctx, const RoiGeom& g,
                                     const TBlob& rois) {
  std::vector<unsigned char> raw;
  return CopyToTemp(ctx, BoxImages(attrs, g, CopyToHost(ctx.run_ctx, rois, &raw).dptr<T>()));
}

TS_REGISTER_OP(ROIPooling).set_attr<FCompute>(kFComputeGPU, RoiPoolForward<gpu>);
TS_REGISTER_OP(_backward_ROIPooling).set_attr<FCompute>(kFComputeGPU, RoiPoolBackward<gpu>);
TS_REGISTER_OP(_contrib_ROIAlign).set_attr<FCompute>(kFComputeGPU, RoiAlignCompute<gpu, true>);
TS_REGISTER_OP(_backward_contrib_ROIAlign)
    .set_attr<FCompute>(kFComputeGPU, RoiAlignCompute<gpu, false>);

}  // namespace tessera::op
