// contrib.Proposal (MXNet's, Faster R-CNN's region proposal layer): anchors
// of every scale and ratio at every cell of the score map, moved by the box
// regression, clipped to the image, filtered by size, the best kept after
// non-maximum suppression. A batch gives each image's proposals in turn
// (MXNet's MultiProposal; Proposal itself took one image). No gradient.
// Shapes and registration; the kernel is proposal-inl.h, shared with the GPU
// (proposal.cu).
#include <vector>

#include "ops/nn/proposal-inl.h"

namespace tessera::op {
namespace {

bool ProposalShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = ParamsOf<ProposalParam>(attrs);
  const Shape& c = (*in)[0];
  if (!c.known()) return false;
  TS_CHECK(c.ndim() == 4 && c[1] == 2 * AnchorCount(p))
      << OpLabel(attrs) << ": cls_prob has shape " << c << "; it must be (N, 2 x " << AnchorCount(p)
      << " anchors (scales x ratios), H, W)";
  AssignShape(attrs, in, 1, Shape{c[0], c[1] * 2, c[2], c[3]}, "bbox_pred");
  AssignShape(attrs, in, 2, Shape{c[0], 3}, "im_info");
  AssignShape(attrs, out, 0, Shape{c[0] * p.rpn_post_nms_top_n, 5}, "output");
  AssignShape(attrs, out, 1, Shape{c[0] * p.rpn_post_nms_top_n, 1}, "score");
  return true;
}

// The base anchors (x1, y1, x2, y2) of cell (0, 0), ratio-major, as MXNet's
// (py-faster-rcnn's) rounding makes them.
}  // namespace

TS_REGISTER_OP(_contrib_Proposal)
    .describe(R"(Region proposals (MXNet's contrib.Proposal, Faster R-CNN): at every
cell of the score map, anchors of every ratio and scale (feature_stride
pixels apart) are moved by bbox_pred and clipped to the image of im_info
[height, width, scale]; boxes smaller than rpn_min_size scale, or beyond the
image, score -1; the rpn_pre_nms_top_n best are suppressed at IoU
threshold and the first rpn_post_nms_top_n kept (repeated when fewer).
Output (N x rpn_post_nms_top_n, 5): [image index, x1, y1, x2, y2]; with
output_score, the scores too. cls_prob is (N, 2 A, H, W), background scores
first. No gradient.)")
    .set_num_inputs(3)
    .set_num_outputs(2)
    .set_attr_parser(ParamParser<ProposalParam>)
    .add_alias("Proposal")
    .add_alias("_contrib_MultiProposal")
    .add_argument("cls_prob", "NDArray", "Object scores, (N, 2 A, H, W).")
    .add_argument("bbox_pred", "NDArray", "Box regression, (N, 4 A, H, W).")
    .add_argument("im_info", "NDArray", "Image sizes, (N, 3): height, width, scale.")
    .add_arguments(ProposalParam::Fields())
    .set_attr<FListInputNames>("FListInputNames",
                               FixedInputNames({"cls_prob", "bbox_pred", "im_info"}))
    .set_attr<FListOutputNames>("FListOutputNames",
                                [](const NodeAttrs&) {
                                  return std::vector<std::string>{"output", "score"};
                                })
    .set_attr<FNumVisibleOutputs>("FNumVisibleOutputs",
                                  [](const NodeAttrs& attrs) {
                                    return ParamsOf<ProposalParam>(attrs).output_score ? 2u : 1u;
                                  })
    .set_attr<FInferShape>("FInferShape", ProposalShape)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FResourceRequest>("FResourceRequest",
                                [](const NodeAttrs&) {
                                  return std::vector<ResourceRequest>{ResourceRequest::kTempSpace};
                                })
    .set_attr<FCompute>(kFComputeCPU, ProposalForward<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>&) {
      return MakeZeroGradNodes(n);
    });

}  // namespace tessera::op
