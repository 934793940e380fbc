// contrib.Proposal (MXNet's, Faster R-CNN's region proposal layer): anchors
// of every scale and ratio at every cell of the score map, moved by the box
// regression, clipped to the image, filtered by size, the best kept after
// non-maximum suppression. A batch gives each image's proposals in turn
// (MXNet's MultiProposal; Proposal itself took one image). No gradient.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "ops/nn/nn_common.h"

namespace tessera::op {
namespace {

struct ProposalParam : Params<ProposalParam> {
  int rpn_pre_nms_top_n = 6000, rpn_post_nms_top_n = 300, rpn_min_size = 16, feature_stride = 16;
  float threshold = 0.7f;
  std::vector<double> scales{4, 8, 16, 32}, ratios{0.5, 1, 2};
  bool output_score = false, iou_loss = false;
  static void Declare(ParamDecl<ProposalParam>& d) {
    d.field("rpn_pre_nms_top_n", &ProposalParam::rpn_pre_nms_top_n)
        .set_default(6000)
        .describe("Boxes kept, best score first, before the suppression (<= 0: all).");
    d.field("rpn_post_nms_top_n", &ProposalParam::rpn_post_nms_top_n)
        .set_default(300)
        .set_lower_bound(1)
        .describe("Proposals returned per image.");
    d.field("threshold", &ProposalParam::threshold)
        .set_default(0.7f)
        .describe("Suppression IoU threshold.");
    d.field("rpn_min_size", &ProposalParam::rpn_min_size)
        .set_default(16)
        .describe("Boxes narrower or lower than this (times im_info's scale) score -1.");
    d.field("scales", &ProposalParam::scales)
        .set_default({4, 8, 16, 32})
        .describe("Anchor scales, in units of feature_stride.");
    d.field("ratios", &ProposalParam::ratios)
        .set_default({0.5, 1, 2})
        .describe("Anchor aspect ratios (height / width).");
    d.field("feature_stride", &ProposalParam::feature_stride)
        .set_default(16)
        .set_lower_bound(1)
        .describe("Image pixels per cell of the score map.");
    d.field("output_score", &ProposalParam::output_score)
        .set_default(false)
        .describe("Also return each proposal's score (a second visible output).");
    d.field("iou_loss", &ProposalParam::iou_loss)
        .set_default(false)
        .describe("The regression moves the corners directly (else centre and log size).");
  }
};

int64_t AnchorCount(const ProposalParam& p) {
  return int64_t(p.scales.size() * p.ratios.size());
}

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
std::vector<std::array<double, 4>> BaseAnchors(const ProposalParam& p) {
  const double s = p.feature_stride, w = s, h = s, cx = (s - 1) / 2, cy = (s - 1) / 2;
  std::vector<std::array<double, 4>> out;
  for (double ratio : p.ratios)
    for (double scale : p.scales) {
      const double size_ratios = std::floor(w * h / ratio);
      const double nw = std::floor(std::sqrt(size_ratios) + 0.5) * scale;
      const double nh = std::floor(nw / scale * ratio + 0.5) * scale;
      out.push_back({cx - (nw - 1) / 2, cy - (nh - 1) / 2, cx + (nw - 1) / 2, cy + (nh - 1) / 2});
    }
  return out;
}

// One image's proposals: rows [x1, y1, x2, y2, score].
template <typename T>
std::vector<std::array<double, 5>> Proposals(const ProposalParam& p, const T* fg, const T* deltas,
                                             const T* info, int64_t na, int64_t H, int64_t W) {
  const auto base = BaseAnchors(p);
  const double ih = double(info[0]), iw = double(info[1]),
               min_size = p.rpn_min_size * double(info[2]);
  const int64_t real_h = int64_t(ih / p.feature_stride), real_w = int64_t(iw / p.feature_stride);
  std::vector<std::array<double, 5>> boxes(size_t(H * W * na));
  for (int64_t y = 0; y < H; ++y)
    for (int64_t x = 0; x < W; ++x)
      for (int64_t a = 0; a < na; ++a) {
        const auto& b = base[size_t(a)];
        const double ax1 = b[0] + double(x * p.feature_stride),
                     ay1 = b[1] + double(y * p.feature_stride);
        const double ax2 = b[2] + double(x * p.feature_stride),
                     ay2 = b[3] + double(y * p.feature_stride);
        auto delta = [&](int k) { return double(deltas[((a * 4 + k) * H + y) * W + x]); };
        double x1, y1, x2, y2;
        if (p.iou_loss) {
          x1 = ax1 + delta(0);
          y1 = ay1 + delta(1);
          x2 = ax2 + delta(2);
          y2 = ay2 + delta(3);
        } else {
          const double w = ax2 - ax1 + 1, h = ay2 - ay1 + 1;
          const double cx = ax1 + (w - 1) / 2 + delta(0) * w, cy = ay1 + (h - 1) / 2 + delta(1) * h;
          const double pw = std::exp(delta(2)) * w, ph = std::exp(delta(3)) * h;
          x1 = cx - (pw - 1) / 2;
          y1 = cy - (ph - 1) / 2;
          x2 = cx + (pw - 1) / 2;
          y2 = cy + (ph - 1) / 2;
        }
        auto clip = [](double v, double hi) { return std::max(std::min(v, hi - 1), 0.0); };
        auto& r = boxes[size_t((y * W + x) * na + a)];
        r = {clip(x1, iw), clip(y1, ih), clip(x2, iw), clip(y2, ih),
             double(fg[(a * H + y) * W + x])};
        if (y >= real_h || x >= real_w) r[4] = -1;  // the padding beyond the image
        if (r[2] - r[0] + 1 < min_size || r[3] - r[1] + 1 < min_size) {
          r[0] -= min_size / 2;
          r[1] -= min_size / 2;
          r[2] += min_size / 2;
          r[3] += min_size / 2;
          r[4] = -1;
        }
      }
  std::vector<size_t> order(boxes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t i, size_t j) { return boxes[i][4] > boxes[j][4]; });
  const size_t pre =
      p.rpn_pre_nms_top_n > 0 ? std::min(order.size(), size_t(p.rpn_pre_nms_top_n)) : order.size();
  const size_t post = std::min(size_t(p.rpn_post_nms_top_n), pre);
  std::vector<std::array<double, 5>> kept;
  std::vector<bool> gone(pre, false);
  auto area = [](const std::array<double, 5>& b) { return (b[2] - b[0] + 1) * (b[3] - b[1] + 1); };
  for (size_t i = 0; i < pre && kept.size() < post; ++i) {
    if (gone[i]) continue;
    const auto& bi = boxes[order[i]];
    kept.push_back(bi);
    for (size_t j = i + 1; j < pre; ++j) {
      if (gone[j]) continue;
      const auto& bj = boxes[order[j]];
      const double w = std::max(0.0, std::min(bi[2], bj[2]) - std::max(bi[0], bj[0]) + 1);
      const double h = std::max(0.0, std::min(bi[3], bj[3]) - std::max(bi[1], bj[1]) + 1);
      const double inter = w * h;
      if (inter / (area(bi) + area(bj) - inter) > p.threshold) gone[j] = true;
    }
  }
  return kept;
}

void ProposalForward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<ProposalParam>(attrs);
  const Shape& cs = in[0].shape();
  const int64_t n = cs[0], na = cs[1] / 2, H = cs[2], W = cs[3], post = p.rpn_post_nms_top_n;
  ForFloatAndDouble(attrs, in[0].dtype(), "Proposal", [&](auto zero) {
    using T = decltype(zero);
    T* rois = out[0].dptr<T>();
    T* scores = out[1].dptr<T>();
    for (int64_t b = 0; b < n; ++b) {
      const T* info = in[2].dptr<T>() + b * 3;
      TS_CHECK(double(info[0]) / p.feature_stride <= double(H) &&
               double(info[1]) / p.feature_stride <= double(W))
          << OpLabel(attrs) << ": im_info of image " << b << " (" << double(info[0]) << " x "
          << double(info[1]) << ") is larger than the " << H << " x " << W
          << " score map covers at feature_stride " << p.feature_stride;
      const T* fg = in[0].dptr<T>() + (b * 2 * na + na) * H * W;  // the foreground scores
      const auto kept = Proposals(p, fg, in[1].dptr<T>() + b * 4 * na * H * W, info, na, H, W);
      for (int64_t i = 0; i < post; ++i) {
        // Fewer proposals than asked for repeat from the first, as MXNet's.
        const std::array<double, 5> r =
            kept.empty() ? std::array<double, 5>{0, 0, 0, 0, 0} : kept[size_t(i) % kept.size()];
        const int64_t row = b * post + i;
        const double vals[5] = {double(b), r[0], r[1], r[2], r[3]};
        auto put = [](T& o, double v, OpReqType rq) {
          if (rq == kAddTo)
            o = T(double(o) + v);
          else if (rq != kNullOp)
            o = T(v);
        };
        for (int k = 0; k < 5; ++k) put(rois[row * 5 + k], vals[k], req[0]);
        put(scores[row], r[4], req[1]);
      }
    }
  });
}

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
    .set_attr<FCompute>(kFComputeCPU, ProposalForward)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>&) {
      return MakeZeroGradNodes(n);
    });

}  // namespace tessera::op
