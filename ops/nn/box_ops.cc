// Bounding boxes (MXNet's contrib.box_iou and contrib.box_nms): overlaps
// of two sets of boxes, and greedy non-maximum suppression. Boxes are
// 'corner' [xmin, ymin, xmax, ymax] or 'center' [x, y, width, height].
#include <vector>

#include "ops/nn/box_ops-inl.h"

namespace tessera::op {
namespace {

// ---------------------------------------------------------------------------
// box_iou

bool BoxIouShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &l = (*in)[0], &r = (*in)[1];
  if (!l.known() || !r.known()) return false;
  TS_CHECK(l.back() == 4 && r.back() == 4)
      << OpLabel(attrs) << ": lhs " << l << " and rhs " << r << " must end with 4 coordinates";
  std::vector<int64_t> dims(l.begin(), l.end() - 1);
  dims.insert(dims.end(), r.begin(), r.end() - 1);
  if (dims.empty()) dims.push_back(1);
  AssignShape(attrs, out, 0, Shape(dims), "output");
  return true;
}

// ---------------------------------------------------------------------------
// box_nms: outputs the kept boxes, best score first, the other rows -1, and
// (hidden) each output row's index in the input (-1 for none).

// The row width k, after checking that the fields fit and do not collide.
int64_t CheckRow(const NodeAttrs& attrs, const Shape& s) {
  const auto& p = ParamsOf<BoxNmsParam>(attrs);
  TS_CHECK(s.ndim() >= 2) << OpLabel(attrs) << ": data has shape " << s
                          << "; it needs (..., boxes, values per box)";
  const int64_t k = s.back();
  auto inside = [&](int64_t i) { return i >= 0 && i < k; };
  auto outside_coords = [&](int64_t i) { return i < p.coord_start || i > p.coord_start + 3; };
  TS_CHECK(inside(p.coord_start) && inside(p.coord_start + 3))
      << OpLabel(attrs) << ": coordinates " << p.coord_start << ".." << p.coord_start + 3
      << " do not fit in rows of " << k << " values";
  TS_CHECK(inside(p.score_index) && outside_coords(p.score_index))
      << OpLabel(attrs) << ": score_index " << p.score_index << " is outside the " << k
      << " values or among the coordinates";
  TS_CHECK(p.id_index < 0 ||
           (inside(p.id_index) && outside_coords(p.id_index) && p.id_index != p.score_index))
      << OpLabel(attrs) << ": id_index " << p.id_index
      << " is outside the row or collides with the score or the coordinates";
  return k;
}

bool BoxNmsShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& s = (*in)[0];
  if (!s.known()) return false;
  CheckRow(attrs, s);
  Shape rec = s;
  rec[s.ndim() - 1] = 1;
  AssignShape(attrs, out, 0, s, "output");
  AssignShape(attrs, out, 1, rec, "record");
  return true;
}

std::vector<ResourceRequest> BoxNmsScratch(const NodeAttrs&) {
  return {ResourceRequest::kTempSpace};
}

}  // namespace

TS_REGISTER_OP(_contrib_box_iou)
    .describe(R"(Intersection over union of every pair of boxes (MXNet's
contrib.box_iou): lhs (..., 4) and rhs (..., 4) give lhs's leading shape
followed by rhs's. 'corner' boxes are [xmin, ymin, xmax, ymax], 'center'
ones [x, y, width, height]. No gradient.

Example: box_iou([[0, 0, 2, 2]], [[1, 1, 3, 3]]) = [[1/7]].)")
    .set_num_inputs(2)
    .set_attr_parser(ParamParser<BoxIouParam>)
    .add_alias("box_iou")
    .add_argument("lhs", "NDArray", "Boxes, (..., 4).")
    .add_argument("rhs", "NDArray", "Boxes, (..., 4).")
    .add_arguments(BoxIouParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"lhs", "rhs"}))
    .set_attr<FInferShape>("FInferShape", BoxIouShape)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, BoxIouCompute<cpu>);

TS_REGISTER_OP(_contrib_box_nms)
    .describe(R"(Greedy non-maximum suppression (MXNet's contrib.box_nms): in each
batch item of data (..., n, k), boxes scoring above valid_thresh (and not of
background_id) are taken best score first (the topk best, if topk >= 0), and
each suppresses the later boxes it overlaps (IoU) by more than
overlap_thresh (of its class only, with id_index and not force_suppress).
The output lists the kept boxes' rows best first, coordinates in out_format,
then rows of -1. The gradient of each kept row goes back to its input row.

Example: x = [[0, 0.5, 0.1, 0.1, 0.2, 0.2], [1, 0.4, 0.1, 0.1, 0.2, 0.2],
[0, 0.3, 0.1, 0.1, 0.14, 0.14], [2, 0.6, 0.5, 0.5, 0.7, 0.8]]:
box_nms(x, overlap_thresh=0.1, id_index=0, force_suppress=1) =
[[2, 0.6, 0.5, 0.5, 0.7, 0.8], [0, 0.5, 0.1, 0.1, 0.2, 0.2], [-1, ...],
[-1, ...]].)")
    .set_num_inputs(1)
    .set_num_outputs(2)
    .set_attr_parser(ParamParser<BoxNmsParam>)
    .add_alias("box_nms")
    .add_alias("_contrib_box_non_maximum_suppression")
    .add_argument("data", "NDArray", "Boxes, (..., n, k), one row per box.")
    .add_arguments(BoxNmsParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataInputName)
    .set_attr<FListOutputNames>("FListOutputNames",
                                [](const NodeAttrs&) {
                                  return std::vector<std::string>{"output", "record"};
                                })
    .set_attr<FNumVisibleOutputs>("FNumVisibleOutputs", [](const NodeAttrs&) { return 1u; })
    .set_attr<FInferShape>("FInferShape", BoxNmsShape)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FResourceRequest>("FResourceRequest", BoxNmsScratch)
    .set_attr<FCompute>(kFComputeCPU, BoxNmsForward<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      return MakeGradNode("_backward_contrib_box_nms", n,
                          {og[0], og[1], NodeEntry{n, 0, 0}, NodeEntry{n, 1, 0}});
    });

TS_REGISTER_OP(_backward_contrib_box_nms)
    .describe("Gradient of box_nms: inputs dOut, dRecord, out, record; output d data.")
    .set_num_inputs(4)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<BoxNmsParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& attrs, std::vector<Shape>* in,
                              std::vector<Shape>* out) {
                             std::vector<Shape> fin{(*in)[2]}, fout(2);
                             if (!BoxNmsShape(attrs, &fin, &fout)) return false;
                             AssignShape(attrs, in, 0, fout[0], "output gradient");
                             AssignShape(attrs, in, 1, fout[1], "record gradient");
                             AssignShape(attrs, in, 3, fout[1], "record");
                             AssignShape(attrs, out, 0, fin[0], "gradient");
                             return true;
                           })
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, BoxNmsBackward<cpu>);

}  // namespace tessera::op
