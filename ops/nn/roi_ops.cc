// ROIPooling and contrib.ROIAlign (MXNet's) on the CPU: shapes, the boxes'
// images, and the registration; the kernels are in roi_ops-inl.h.
#include <vector>

#include "ops/nn/roi_ops-inl.h"

namespace tessera::op {

template <>
template <typename T>
const int64_t* RoiBoxes<cpu>::Images(const NodeAttrs& attrs, const OpContext& ctx, const RoiGeom& g,
                                     const TBlob& rois) {
  const std::vector<int64_t> img = BoxImages(attrs, g, rois.dptr<T>());
  int64_t* space = ctx.requested.at(0).get_space_typed<int64_t>(std::max<size_t>(img.size(), 1));
  std::copy(img.begin(), img.end(), space);
  return space;
}

namespace {

bool RoiPoolShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known() || !(*in)[1].known()) return false;
  const RoiGeom g = RoiGeomOf<ROIPoolingParam>(attrs, (*in)[0], (*in)[1], false, false);
  for (size_t i = 0; i < 2; ++i)
    AssignShape(attrs, out, i, Shape{g.r, g.c, g.ph, g.pw}, i ? "max_idx" : "output");
  return true;
}

bool RoiPoolType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  std::vector<DType> o{(*out)[0]};
  const bool known = FloatSameType(attrs, in, &o);
  (*out)[0] = o[0];
  AssignType(attrs, out, 1, DType::kInt64, "max_idx");
  return known;
}

bool RoiAlignShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known() || !(*in)[1].known()) return false;
  const auto& p = ParamsOf<ROIAlignParam>(attrs);
  const RoiGeom g = RoiGeomOf<ROIAlignParam>(attrs, (*in)[0], (*in)[1], true, p.position_sensitive);
  AssignShape(attrs, out, 0, Shape{g.r, g.c_out, g.ph, g.pw}, "output");
  return true;
}

// The boxes' images (and, on the GPU, nothing else) live in temp space.
std::vector<ResourceRequest> RoiTempSpace(const NodeAttrs&) {
  return {ResourceRequest::kTempSpace};
}

}  // namespace

TS_REGISTER_OP(ROIPooling)
    .describe(R"(Max pooling over regions of interest (MXNet's ROIPooling, Fast
R-CNN): each box [batch_index, x1, y1, x2, y2] of rois (R, 5), its corners
scaled by spatial_scale and rounded, is split into pooled_size bins, and
each bin of each channel gives its maximum (0 for an empty bin or a box with
a negative batch index). Output (R, C, ph, pw); the positions of the maxima
are a hidden second output the gradient uses.)")
    .set_num_inputs(2)
    .set_num_outputs(2)
    .set_attr_parser(ParamParser<ROIPoolingParam>)
    .add_argument("data", "NDArray", "Feature maps, NCHW.")
    .add_argument("rois", "NDArray", "Boxes, (R, 5): [batch_index, x1, y1, x2, y2].")
    .add_arguments(ROIPoolingParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data", "rois"}))
    .set_attr<FListOutputNames>("FListOutputNames",
                                [](const NodeAttrs&) {
                                  return std::vector<std::string>{"output", "max_idx"};
                                })
    .set_attr<FNumVisibleOutputs>("FNumVisibleOutputs", [](const NodeAttrs&) { return 1u; })
    .set_attr<FInferShape>("FInferShape", RoiPoolShape)
    .set_attr<FInferType>("FInferType", RoiPoolType)
    .set_attr<FResourceRequest>("FResourceRequest", RoiTempSpace)
    .set_attr<FCompute>(kFComputeCPU, RoiPoolForward<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      return MakeGradNode("_backward_ROIPooling", n,
                          {og[0], NodeEntry{n, 1, 0}, n->inputs[0], n->inputs[1]});
    });

TS_REGISTER_OP(_backward_ROIPooling)
    .describe(
        "Gradient of ROIPooling: inputs dOut, max_idx, data, rois; outputs d data, d rois "
        "(zeros).")
    .set_num_inputs(4)
    .set_num_outputs(2)
    .set_attr_parser(ParamParser<ROIPoolingParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& attrs, std::vector<Shape>* in,
                              std::vector<Shape>* out) {
                             std::vector<Shape> fin{(*in)[2], (*in)[3]}, fout(2);
                             if (!RoiPoolShape(attrs, &fin, &fout)) return false;
                             AssignShape(attrs, in, 0, fout[0], "output gradient");
                             AssignShape(attrs, in, 1, fout[1], "max_idx");
                             AssignShape(attrs, out, 0, fin[0], "gradient of data");
                             AssignShape(attrs, out, 1, fin[1], "gradient of rois");
                             return true;
                           })
    .set_attr<FInferType>("FInferType",
                          [](const NodeAttrs& attrs, std::vector<DType>* in,
                             std::vector<DType>* out) {
                            const DType t = (*in)[2];
                            if (t == DType::kUnknown) return false;
                            AssignType(attrs, in, 0, t, "output gradient");
                            AssignType(attrs, in, 1, DType::kInt64, "max_idx");
                            AssignType(attrs, out, 0, t, "gradient of data");
                            AssignType(attrs, out, 1, t, "gradient of rois");
                            return true;
                          })
    .set_attr<FCompute>(kFComputeCPU, RoiPoolBackward<cpu>);

TS_REGISTER_OP(_contrib_ROIAlign)
    .describe(R"(Region of interest align (MXNet's contrib.ROIAlign, Mask R-CNN): each
box of rois ((R, 5) [batch_index, x1, y1, x2, y2], or (R, 4) on image 0),
scaled by spatial_scale without rounding, is split into pooled_size bins;
each bin averages bilinear samples on a sample_ratio x sample_ratio grid
(adaptive by default). Output (R, C, ph, pw), or (R, C / (ph pw), ph, pw)
position-sensitive. A box with a negative batch index gives zeros.)")
    .set_num_inputs(2)
    .set_attr_parser(ParamParser<ROIAlignParam>)
    .add_alias("ROIAlign")
    .add_argument("data", "NDArray", "Feature maps, NCHW.")
    .add_argument("rois", "NDArray", "Boxes, (R, 5) or (R, 4).")
    .add_arguments(ROIAlignParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data", "rois"}))
    .set_attr<FInferShape>("FInferShape", RoiAlignShape)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FResourceRequest>("FResourceRequest", RoiTempSpace)
    .set_attr<FCompute>(kFComputeCPU, RoiAlignCompute<cpu, true>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      return MakeGradNode("_backward_contrib_ROIAlign", n, {og[0], n->inputs[0], n->inputs[1]});
    });

TS_REGISTER_OP(_backward_contrib_ROIAlign)
    .describe("Gradient of ROIAlign: inputs dOut, data, rois; outputs d data, d rois (zeros).")
    .set_num_inputs(3)
    .set_num_outputs(2)
    .set_attr_parser(ParamParser<ROIAlignParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& attrs, std::vector<Shape>* in,
                              std::vector<Shape>* out) {
                             std::vector<Shape> fin{(*in)[1], (*in)[2]}, fout(1);
                             if (!RoiAlignShape(attrs, &fin, &fout)) return false;
                             AssignShape(attrs, in, 0, fout[0], "output gradient");
                             AssignShape(attrs, out, 0, fin[0], "gradient of data");
                             AssignShape(attrs, out, 1, fin[1], "gradient of rois");
                             return true;
                           })
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FResourceRequest>("FResourceRequest", RoiTempSpace)
    .set_attr<FCompute>(kFComputeCPU, RoiAlignCompute<cpu, false>);

}  // namespace tessera::op
