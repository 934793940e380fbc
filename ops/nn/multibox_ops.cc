// SSD's anchor ops (MXNet's contrib.MultiBoxPrior, MultiBoxTarget,
// MultiBoxDetection): anchors over a feature map, training targets from
// ground-truth boxes, and detections decoded from predictions with
// per-class suppression. Their gradients are zero, as MXNet's: priors
// depend only on shapes, targets and detections are constants to training.
// Shapes and registration; the kernels are multibox_ops-inl.h, shared with
// the GPU (multibox_ops.cu).
#include <vector>

#include "ops/nn/multibox_ops-inl.h"

namespace tessera::op {
namespace {

bool PriorShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[0];
  if (!d.known()) return false;
  TS_CHECK(d.ndim() == 4) << OpLabel(attrs) << ": data has shape " << d
                          << "; it must be NCHW (its height and width place the anchors)";
  AssignShape(attrs, out, 0, Shape{1, d[2] * d[3] * AnchorsPerCell(attrs), 4}, "output");
  return true;
}

bool TargetShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &a = (*in)[0], &l = (*in)[1], &c = (*in)[2];
  if (!a.known() || !l.known() || !c.known()) return false;
  TS_CHECK(a.ndim() == 3 && a[0] == 1 && a[2] == 4)
      << OpLabel(attrs) << ": anchor has shape " << a << "; it must be (1, N, 4)";
  TS_CHECK(l.ndim() == 3 && l[2] >= 5)
      << OpLabel(attrs) << ": label has shape " << l
      << "; it must be (batch, boxes, 5 or more): [class, xmin, ymin, xmax, ymax]";
  TS_CHECK(c.ndim() == 3 && c[0] == l[0] && c[2] == a[1])
      << OpLabel(attrs) << ": cls_pred has shape " << c << "; it must be (batch " << l[0]
      << ", classes, anchors " << a[1] << ")";
  AssignShape(attrs, out, 0, Shape{l[0], a[1] * 4}, "loc_target");
  AssignShape(attrs, out, 1, Shape{l[0], a[1] * 4}, "loc_mask");
  AssignShape(attrs, out, 2, Shape{l[0], a[1]}, "cls_target");
  return true;
}

bool DetectionShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &c = (*in)[0], &l = (*in)[1], &a = (*in)[2];
  if (!c.known() || !l.known() || !a.known()) return false;
  TS_CHECK(a.ndim() == 3 && a[0] == 1 && a[2] == 4)
      << OpLabel(attrs) << ": anchor has shape " << a << "; it must be (1, N, 4)";
  TS_CHECK(c.ndim() == 3 && c[2] == a[1]) << OpLabel(attrs) << ": cls_prob has shape " << c
                                          << "; it must be (batch, classes, " << a[1] << ")";
  TS_CHECK(l.ndim() == 2 && l[0] == c[0] && l[1] == a[1] * 4)
      << OpLabel(attrs) << ": loc_pred has shape " << l << "; it must be (" << c[0] << ", "
      << a[1] * 4 << ")";
  AssignShape(attrs, out, 0, Shape{c[0], a[1], 6}, "output");
  return true;
}

// Temp space: the GPU's sizes and ratios, the per-image scratch.
std::vector<ResourceRequest> Scratch(const NodeAttrs&) {
  return {ResourceRequest::kTempSpace};
}

}  // namespace

TS_REGISTER_OP(_contrib_MultiBoxPrior)
    .describe(R"(SSD's anchor boxes over a feature map (MXNet's
contrib.MultiBoxPrior): at each cell (r, c) of data's H x W map, centred at
((c + offsets[1]) steps[1], (r + offsets[0]) steps[0]) (steps default to
1 / W and 1 / H), one box per size with the first ratio, then one per other
ratio with the first size, a box of size s and ratio q being s H / W sqrt(q)
wide and s / sqrt(q) high. Output (1, H W (sizes + ratios - 1), 4) as
[xmin, ymin, xmax, ymax], clipped to [0, 1] with clip. Zero gradient.)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<MultiBoxPriorParam>)
    .add_alias("MultiBoxPrior")
    .add_argument("data", "NDArray", "The feature map, NCHW (its values are not read).")
    .add_arguments(MultiBoxPriorParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataInputName)
    .set_attr<FInferShape>("FInferShape", PriorShape)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FResourceRequest>("FResourceRequest", Scratch)
    .set_attr<FCompute>(kFComputeCPU, PriorForward<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>&) {
      return MakeZeroGradNodes(n);
    });

TS_REGISTER_OP(_contrib_MultiBoxTarget)
    .describe(R"(SSD's training targets (MXNet's contrib.MultiBoxTarget): anchor (1, N,
4), label (batch, M, 5+) rows [class, xmin, ymin, xmax, ymax] ended by a row
of -1, cls_pred (batch, classes, N). Each box takes its best-overlapping free
anchor, then every anchor whose best overlap passes overlap_threshold is a
positive too; negatives are the rest, or with negative_mining_ratio the
hardest ones. Outputs loc_target (batch, 4N): the matched box encoded against
the anchor ((gx - ax) / aw / v0, (gy - ay) / ah / v1, log(gw / aw) / v2,
log(gh / ah) / v3); loc_mask (batch, 4N): 1 for positives; cls_target
(batch, N): class + 1 for positives, 0 for negatives, ignore_label else.
Zero gradient.)")
    .set_num_inputs(3)
    .set_num_outputs(3)
    .set_attr_parser(ParamParser<MultiBoxTargetParam>)
    .add_alias("MultiBoxTarget")
    .add_argument("anchor", "NDArray", "Anchors, (1, N, 4).")
    .add_argument("label", "NDArray", "Ground truth, (batch, M, 5 or more).")
    .add_argument("cls_pred", "NDArray", "Class predictions, (batch, classes, N).")
    .add_arguments(MultiBoxTargetParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"anchor", "label", "cls_pred"}))
    .set_attr<FListOutputNames>(
        "FListOutputNames",
        [](const NodeAttrs&) {
          return std::vector<std::string>{"loc_target", "loc_mask", "cls_target"};
        })
    .set_attr<FInferShape>("FInferShape", TargetShape)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FResourceRequest>("FResourceRequest", Scratch)
    .set_attr<FCompute>(kFComputeCPU, TargetForward<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>&) {
      return MakeZeroGradNodes(n);
    });

TS_REGISTER_OP(_contrib_MultiBoxDetection)
    .describe(R"(SSD's detections (MXNet's contrib.MultiBoxDetection): cls_prob
(batch, classes, N), loc_pred (batch, 4N), anchor (1, N, 4). Each anchor's
best class other than background_id, if it scores at least threshold, gives
[class, score, xmin, ymin, xmax, ymax], the box decoded from the anchor and
the regression scaled by variances (clipped to [0, 1] with clip); classes
count from 0 without the background. Detections are sorted by score and
suppressed within a class (all classes with force_suppress) at IoU >=
nms_threshold; a suppressed one keeps its row with class -1. Output (batch,
N, 6), rows of -1 after the detections. Zero gradient.)")
    .set_num_inputs(3)
    .set_attr_parser(ParamParser<MultiBoxDetectionParam>)
    .add_alias("MultiBoxDetection")
    .add_argument("cls_prob", "NDArray", "Class probabilities, (batch, classes, N).")
    .add_argument("loc_pred", "NDArray", "Box regression, (batch, 4N).")
    .add_argument("anchor", "NDArray", "Anchors, (1, N, 4).")
    .add_arguments(MultiBoxDetectionParam::Fields())
    .set_attr<FListInputNames>("FListInputNames",
                               FixedInputNames({"cls_prob", "loc_pred", "anchor"}))
    .set_attr<FInferShape>("FInferShape", DetectionShape)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FResourceRequest>("FResourceRequest", Scratch)
    .set_attr<FCompute>(kFComputeCPU, DetectionForward<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>&) {
      return MakeZeroGradNodes(n);
    });

}  // namespace tessera::op
