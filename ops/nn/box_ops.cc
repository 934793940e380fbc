// Bounding boxes (MXNet's contrib.box_iou and contrib.box_nms): overlaps
// of two sets of boxes, and greedy non-maximum suppression. Boxes are
// 'corner' [xmin, ymin, xmax, ymax] or 'center' [x, y, width, height].
#include <algorithm>
#include <numeric>
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

struct BoxNmsParam : Params<BoxNmsParam> {
  float overlap_thresh = 0.5f, valid_thresh = 0;
  int topk = -1, coord_start = 2, score_index = 1, id_index = -1, background_id = -1;
  bool force_suppress = false;
  int in_format = kCorner, out_format = kCorner;
  static void Declare(ParamDecl<BoxNmsParam>& d) {
    d.field("overlap_thresh", &BoxNmsParam::overlap_thresh)
        .set_default(0.5f)
        .describe("A box overlapping (IoU) a better one by more than this is suppressed.");
    d.field("valid_thresh", &BoxNmsParam::valid_thresh)
        .set_default(0.f)
        .describe("Only boxes scoring above this take part.");
    d.field("topk", &BoxNmsParam::topk)
        .set_default(-1)
        .describe("Only the topk best-scoring boxes take part; -1: all.");
    d.field("coord_start", &BoxNmsParam::coord_start)
        .set_default(2)
        .describe("Position of the 4 coordinates in a box's row.");
    d.field("score_index", &BoxNmsParam::score_index)
        .set_default(1)
        .describe("Position of the score in a box's row.");
    d.field("id_index", &BoxNmsParam::id_index)
        .set_default(-1)
        .describe("Position of the class id in a box's row; -1: none.");
    d.field("background_id", &BoxNmsParam::background_id)
        .set_default(-1)
        .describe("With id_index: boxes of this class are dropped first.");
    d.field("force_suppress", &BoxNmsParam::force_suppress)
        .set_default(false)
        .describe("Suppress across classes (else only within a class, with id_index).");
    DeclareFormat(d, &BoxNmsParam::in_format, "in_format", "The input boxes' format.");
    DeclareFormat(d, &BoxNmsParam::out_format, "out_format", "The output boxes' format.");
  }
};

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

// The kept boxes of one batch item, best first (MXNet's filter, sort, topk
// and greedy suppression).
template <typename T>
std::vector<int64_t> KeptBoxes(const BoxNmsParam& p, const T* x, int64_t n, int64_t k) {
  std::vector<int64_t> order;
  for (int64_t i = 0; i < n; ++i) {
    const T* row = x + i * k;
    if (!(double(row[p.score_index]) > p.valid_thresh)) continue;
    if (p.id_index >= 0 && double(row[p.id_index]) == p.background_id) continue;
    order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return x[a * k + p.score_index] > x[b * k + p.score_index];
  });
  if (p.topk >= 0 && int64_t(order.size()) > p.topk) order.resize(size_t(p.topk));
  std::vector<bool> gone(order.size(), false);
  std::vector<int64_t> kept;
  for (size_t a = 0; a < order.size(); ++a) {
    if (gone[a]) continue;
    kept.push_back(order[a]);
    const T* ra = x + order[a] * k;
    const Corners ca = CornersOf(ra + p.coord_start, p.in_format);
    for (size_t b = a + 1; b < order.size(); ++b) {
      if (gone[b]) continue;
      const T* rb = x + order[b] * k;
      if (p.id_index >= 0 && !p.force_suppress && ra[p.id_index] != rb[p.id_index]) continue;
      if (IoU(ca, CornersOf(rb + p.coord_start, p.in_format)) > p.overlap_thresh) gone[b] = true;
    }
  }
  return kept;
}

// The coordinates of a box in out_format: a linear map of in_format's.
template <typename T>
void ConvertBox(const T* in, T* out, int from, int to) {
  if (from == to) {
    std::copy(in, in + 4, out);
  } else if (to == kCenter) {  // corners -> centre and size
    out[0] = T((double(in[0]) + double(in[2])) / 2);
    out[1] = T((double(in[1]) + double(in[3])) / 2);
    out[2] = T(double(in[2]) - double(in[0]));
    out[3] = T(double(in[3]) - double(in[1]));
  } else {
    out[0] = T(double(in[0]) - double(in[2]) / 2);
    out[1] = T(double(in[1]) - double(in[3]) / 2);
    out[2] = T(double(in[0]) + double(in[2]) / 2);
    out[3] = T(double(in[1]) + double(in[3]) / 2);
  }
}

// The gradient through ConvertBox: the transpose of its map.
template <typename T>
void ConvertBoxGrad(const T* g, T* dx, int from, int to) {
  if (from == to) {
    std::copy(g, g + 4, dx);
  } else if (to == kCenter) {
    dx[0] = T(double(g[0]) / 2 - double(g[2]));
    dx[1] = T(double(g[1]) / 2 - double(g[3]));
    dx[2] = T(double(g[0]) / 2 + double(g[2]));
    dx[3] = T(double(g[1]) / 2 + double(g[3]));
  } else {
    dx[0] = T(double(g[0]) + double(g[2]));
    dx[1] = T(double(g[1]) + double(g[3]));
    dx[2] = T((double(g[2]) - double(g[0])) / 2);
    dx[3] = T((double(g[3]) - double(g[1])) / 2);
  }
}

void BoxNmsForward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<BoxNmsParam>(attrs);
  const Shape& s = in[0].shape();
  const int64_t k = CheckRow(attrs, s), n = s[s.ndim() - 2], batch = s.Size() / (n * k);
  ForFloatAndDouble(attrs, in[0].dtype(), "box_nms", [&](auto zero) {
    using T = decltype(zero);
    const T* x = in[0].dptr<T>();
    T* y = out[0].dptr<T>();
    T* rec = out[1].dptr<T>();
    // One item's rows and record, then written under each output's request.
    std::vector<T> rows(static_cast<size_t>(n * k)), order(static_cast<size_t>(n));
    auto put = [](T* dst, const std::vector<T>& v, OpReqType r) {
      for (size_t i = 0; i < v.size(); ++i)
        if (r == kAddTo)
          dst[i] = T(dst[i] + v[i]);
        else if (r != kNullOp)
          dst[i] = v[i];
    };
    for (int64_t b = 0; b < batch; ++b) {
      const T* xb = x + b * n * k;
      std::fill(rows.begin(), rows.end(), T(-1));
      std::fill(order.begin(), order.end(), T(-1));
      const std::vector<int64_t> kept = KeptBoxes(p, xb, n, k);
      for (size_t o = 0; o < kept.size(); ++o) {
        const T* src = xb + kept[o] * k;
        T* dst = rows.data() + int64_t(o) * k;
        std::copy(src, src + k, dst);
        ConvertBox(src + p.coord_start, dst + p.coord_start, p.in_format, p.out_format);
        order[o] = T(kept[o]);
      }
      put(y + b * n * k, rows, req[0]);
      put(rec + b * n, order, req[1]);
    }
  });
}

// in: dOut, dRecord, out, record; d data: each kept box's output gradient
// back at its input row (through the format conversion), zero elsewhere.
void BoxNmsBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<BoxNmsParam>(attrs);
  const Shape& s = in[0].shape();
  const int64_t k = s.back(), n = s[s.ndim() - 2], batch = s.Size() / (n * k);
  ForFloatAndDouble(attrs, in[0].dtype(), "_backward_contrib_box_nms", [&](auto zero) {
    using T = decltype(zero);
    const T* g = in[0].dptr<T>();
    const T* rec = in[3].dptr<T>();
    T* dx = out[0].dptr<T>();
    const bool add = req[0] == kAddTo;
    if (!add) std::fill(dx, dx + s.Size(), T(0));
    std::vector<T> row(static_cast<size_t>(k));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t o = 0; o < n; ++o) {
        const double r = double(rec[b * n + o]);
        if (r < 0 || r >= double(n)) continue;
        const T* go = g + (b * n + o) * k;
        std::copy(go, go + k, row.begin());
        ConvertBoxGrad(go + p.coord_start, row.data() + p.coord_start, p.in_format, p.out_format);
        T* d = dx + (b * n + int64_t(r)) * k;
        for (int64_t j = 0; j < k; ++j) d[j] = add ? T(d[j] + row[size_t(j)]) : row[size_t(j)];
      }
  });
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
    .set_attr<FCompute>(kFComputeCPU, BoxNmsForward)
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
    .set_attr<FCompute>(kFComputeCPU, BoxNmsBackward);

}  // namespace tessera::op
