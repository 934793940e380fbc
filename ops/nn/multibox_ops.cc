// SSD's anchor ops (MXNet's contrib.MultiBoxPrior, MultiBoxTarget,
// MultiBoxDetection): anchors over a feature map, training targets from
// ground-truth boxes, and detections decoded from predictions with
// per-class suppression. Their gradients are zero, as MXNet's: priors
// depend only on shapes, targets and detections are constants to training.
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "ops/nn/nn_common.h"

namespace tessera::op {
namespace {

std::vector<double> Variances(const NodeAttrs& attrs, const std::vector<double>& v) {
  TS_CHECK(v.size() == 4) << OpLabel(attrs) << ": variances has " << v.size()
                          << " values; it needs 4";
  return v;
}

// IoU of corner boxes; 0 when the union is empty (MXNet's safe division).
template <typename A, typename B>
double CornerIoU(const A* a, const B* b) {
  const double w =
      std::max(0.0, std::min(double(a[2]), double(b[2])) - std::max(double(a[0]), double(b[0])));
  const double h =
      std::max(0.0, std::min(double(a[3]), double(b[3])) - std::max(double(a[1]), double(b[1])));
  const double i = w * h;
  const double u = (double(a[2]) - double(a[0])) * (double(a[3]) - double(a[1])) +
                   (double(b[2]) - double(b[0])) * (double(b[3]) - double(b[1])) - i;
  return u <= 0 ? 0.0 : i / u;
}

// ---------------------------------------------------------------------------
// MultiBoxPrior

struct MultiBoxPriorParam : Params<MultiBoxPriorParam> {
  std::vector<double> sizes{1.0}, ratios{1.0}, steps{-1.0, -1.0}, offsets{0.5, 0.5};
  bool clip = false;
  static void Declare(ParamDecl<MultiBoxPriorParam>& d) {
    d.field("sizes", &MultiBoxPriorParam::sizes)
        .set_default({1.0})
        .describe("Anchor sizes, as fractions of the image.");
    d.field("ratios", &MultiBoxPriorParam::ratios)
        .set_default({1.0})
        .describe("Anchor aspect ratios (width / height).");
    d.field("clip", &MultiBoxPriorParam::clip)
        .set_default(false)
        .describe("Clip the anchors to [0, 1].");
    d.field("steps", &MultiBoxPriorParam::steps)
        .set_default({-1.0, -1.0})
        .describe("The step between anchor centres (y, x); -1: 1 / the map's size.");
    d.field("offsets", &MultiBoxPriorParam::offsets)
        .set_default({0.5, 0.5})
        .describe("The centres' offset within a cell (y, x).");
  }
};

int64_t AnchorsPerCell(const NodeAttrs& attrs) {
  const auto& p = ParamsOf<MultiBoxPriorParam>(attrs);
  TS_CHECK(!p.sizes.empty() && !p.ratios.empty())
      << OpLabel(attrs) << ": sizes and ratios need one value or more";
  TS_CHECK(p.steps.size() == 2 && p.offsets.size() == 2)
      << OpLabel(attrs) << ": steps and offsets need 2 values (y, x)";
  return int64_t(p.sizes.size() + p.ratios.size()) - 1;
}

bool PriorShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[0];
  if (!d.known()) return false;
  TS_CHECK(d.ndim() == 4) << OpLabel(attrs) << ": data has shape " << d
                          << "; it must be NCHW (its height and width place the anchors)";
  AssignShape(attrs, out, 0, Shape{1, d[2] * d[3] * AnchorsPerCell(attrs), 4}, "output");
  return true;
}

// Per cell, row-major: every size with the first ratio, then the first size
// with every other ratio; each [xmin, ymin, xmax, ymax].
void PriorForward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<MultiBoxPriorParam>(attrs);
  const int64_t H = in[0].shape()[2], W = in[0].shape()[3];
  const double sy = p.steps[0] > 0 && p.steps[1] > 0 ? p.steps[0] : 1.0 / double(H);
  const double sx = p.steps[0] > 0 && p.steps[1] > 0 ? p.steps[1] : 1.0 / double(W);
  std::vector<double> boxes;
  auto put = [&](double cx, double cy, double size, double ratio) {
    const double w = size * double(H) / double(W) * std::sqrt(ratio) / 2;
    const double h = size / std::sqrt(ratio) / 2;
    for (double v : {cx - w, cy - h, cx + w, cy + h})
      boxes.push_back(p.clip ? std::clamp(v, 0.0, 1.0) : v);
  };
  for (int64_t r = 0; r < H; ++r)
    for (int64_t c = 0; c < W; ++c) {
      const double cy = (double(r) + p.offsets[0]) * sy, cx = (double(c) + p.offsets[1]) * sx;
      for (double size : p.sizes) put(cx, cy, size, p.ratios[0]);
      for (size_t j = 1; j < p.ratios.size(); ++j) put(cx, cy, p.sizes[0], p.ratios[j]);
    }
  ForFloatAndDouble(attrs, out[0].dtype(), "MultiBoxPrior", [&](auto zero) {
    using T = decltype(zero);
    T* y = out[0].dptr<T>();
    for (size_t i = 0; i < boxes.size(); ++i)
      y[i] = req[0] == kAddTo ? T(double(y[i]) + boxes[i]) : T(boxes[i]);
  });
}

// ---------------------------------------------------------------------------
// MultiBoxTarget

struct MultiBoxTargetParam : Params<MultiBoxTargetParam> {
  float overlap_threshold = 0.5f, ignore_label = -1, negative_mining_ratio = -1,
        negative_mining_thresh = 0.5f;
  int minimum_negative_samples = 0;
  std::vector<double> variances{0.1, 0.1, 0.2, 0.2};
  static void Declare(ParamDecl<MultiBoxTargetParam>& d) {
    d.field("overlap_threshold", &MultiBoxTargetParam::overlap_threshold)
        .set_default(0.5f)
        .describe("An anchor overlapping (IoU) a box by more than this is a positive.");
    d.field("ignore_label", &MultiBoxTargetParam::ignore_label)
        .set_default(-1.f)
        .describe("Class target of anchors that are neither positive nor negative.");
    d.field("negative_mining_ratio", &MultiBoxTargetParam::negative_mining_ratio)
        .set_default(-1.f)
        .describe("Negatives kept per positive (hardest first); <= 0: every negative.");
    d.field("negative_mining_thresh", &MultiBoxTargetParam::negative_mining_thresh)
        .set_default(0.5f)
        .describe("Only anchors overlapping every box below this can be mined negatives.");
    d.field("minimum_negative_samples", &MultiBoxTargetParam::minimum_negative_samples)
        .set_default(0)
        .describe("Accepted for MXNet's files; unused there too.");
    d.field("variances", &MultiBoxTargetParam::variances)
        .set_default({0.1, 0.1, 0.2, 0.2})
        .describe("The box-regression targets are divided by these (x, y, w, h).");
  }
};

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

// One batch item: the anchors' flags (1 positive, 0 negative, -1 ignored)
// and matched boxes, by MXNet's rule: each box first takes its best free
// anchor (greedily, best overlap first), then every other anchor whose best
// overlap passes the threshold, then negatives (all, or mined).
template <typename T>
void MatchAnchors(const MultiBoxTargetParam& p, const T* anchors, int64_t n, const T* label,
                  int64_t boxes, int64_t width, const T* cls, int64_t classes,
                  std::vector<int>* flag, std::vector<int64_t>* match) {
  int64_t valid = 0;
  while (valid < boxes && double(label[valid * width]) != -1.0) ++valid;
  flag->assign(size_t(n), -1);
  match->assign(size_t(n), -1);
  if (valid == 0) return;
  std::vector<double> iou(size_t(n * valid));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t k = 0; k < valid; ++k)
      iou[size_t(j * valid + k)] = CornerIoU(anchors + 4 * j, label + k * width + 1);
  std::vector<double> best(size_t(n), -1.0);
  std::vector<bool> gt_done(size_t(valid), false);
  int64_t positives = 0;
  for (;;) {
    int64_t ba = -1, bg = -1;
    double m = 1e-6;
    for (int64_t j = 0; j < n; ++j) {
      if ((*flag)[size_t(j)] == 1) continue;
      for (int64_t k = 0; k < valid; ++k)
        if (!gt_done[size_t(k)] && iou[size_t(j * valid + k)] > m) {
          m = iou[size_t(j * valid + k)];
          ba = j;
          bg = k;
        }
    }
    if (ba < 0) break;
    (*flag)[size_t(ba)] = 1;
    (*match)[size_t(ba)] = bg;
    best[size_t(ba)] = m;
    gt_done[size_t(bg)] = true;
    ++positives;
  }
  auto best_box = [&](int64_t j) {
    int64_t bg = 0;
    for (int64_t k = 1; k < valid; ++k)
      if (iou[size_t(j * valid + k)] > iou[size_t(j * valid + bg)]) bg = k;
    return bg;
  };
  for (int64_t j = 0; j < n; ++j) {
    if ((*flag)[size_t(j)] == 1) continue;
    const int64_t bg = best_box(j);
    best[size_t(j)] = iou[size_t(j * valid + bg)];
    if (p.overlap_threshold > 0 && best[size_t(j)] > p.overlap_threshold) {
      (*flag)[size_t(j)] = 1;
      (*match)[size_t(j)] = bg;
      ++positives;
    }
  }
  if (p.negative_mining_ratio <= 0) {
    for (int& f : *flag)
      if (f != 1) f = 0;
    return;
  }
  // Hard negatives: the lowest background probability (softmax over the
  // classes of cls_pred) first, among anchors overlapping no box much.
  int64_t want =
      std::min<int64_t>(int64_t(double(positives) * p.negative_mining_ratio), n - positives);
  std::vector<std::pair<double, int64_t>> cand;
  for (int64_t j = 0; j < n; ++j) {
    if ((*flag)[size_t(j)] != -1 || best[size_t(j)] >= p.negative_mining_thresh) continue;
    double mx = double(cls[j]);
    for (int64_t c = 1; c < classes; ++c) mx = std::max(mx, double(cls[c * n + j]));
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(double(cls[c * n + j]) - mx);
    cand.emplace_back(std::exp(double(cls[j]) - mx) / sum, j);
  }
  std::stable_sort(cand.begin(), cand.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  want = std::min<int64_t>(want, int64_t(cand.size()));
  for (int64_t i = 0; i < want; ++i) (*flag)[size_t(cand[size_t(i)].second)] = 0;
}

void TargetForward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<MultiBoxTargetParam>(attrs);
  const std::vector<double> v = Variances(attrs, p.variances);
  const int64_t n = in[0].shape()[1], batch = in[1].shape()[0], boxes = in[1].shape()[1],
                width = in[1].shape()[2], classes = in[2].shape()[1];
  ForFloatAndDouble(attrs, in[0].dtype(), "MultiBoxTarget", [&](auto zero) {
    using T = decltype(zero);
    const T* anchors = in[0].dptr<T>();
    std::vector<T> loc(size_t(batch * n * 4), T(0)), mask(size_t(batch * n * 4), T(0)),
        cls(size_t(batch * n), T(p.ignore_label));
    std::vector<int> flag;
    std::vector<int64_t> match;
    for (int64_t b = 0; b < batch; ++b) {
      const T* label = in[1].dptr<T>() + b * boxes * width;
      MatchAnchors(p, anchors, n, label, boxes, width, in[2].dptr<T>() + b * classes * n, classes,
                   &flag, &match);
      for (int64_t j = 0; j < n; ++j) {
        const int f = flag[size_t(j)];
        if (f == 0) cls[size_t(b * n + j)] = T(0);
        if (f != 1) continue;
        const T* g = label + match[size_t(j)] * width;
        cls[size_t(b * n + j)] = T(double(g[0]) + 1);  // 0 is the background
        const T* a = anchors + 4 * j;
        const double aw = double(a[2]) - double(a[0]), ah = double(a[3]) - double(a[1]);
        const double ax = (double(a[0]) + double(a[2])) / 2, ay = (double(a[1]) + double(a[3])) / 2;
        const double gw = double(g[3]) - double(g[1]), gh = double(g[4]) - double(g[2]);
        const double gx = (double(g[1]) + double(g[3])) / 2, gy = (double(g[2]) + double(g[4])) / 2;
        const double t[4] = {(gx - ax) / aw / v[0], (gy - ay) / ah / v[1], std::log(gw / aw) / v[2],
                             std::log(gh / ah) / v[3]};
        for (int k = 0; k < 4; ++k) {
          loc[size_t((b * n + j) * 4 + k)] = T(t[k]);
          mask[size_t((b * n + j) * 4 + k)] = T(1);
        }
      }
    }
    const std::vector<T>* results[3] = {&loc, &mask, &cls};
    for (int o = 0; o < 3; ++o) {
      T* y = out[size_t(o)].dptr<T>();
      const std::vector<T>& r = *results[o];
      for (size_t i = 0; i < r.size(); ++i)
        if (req[size_t(o)] == kAddTo)
          y[i] = T(y[i] + r[i]);
        else if (req[size_t(o)] != kNullOp)
          y[i] = r[i];
    }
  });
}

// ---------------------------------------------------------------------------
// MultiBoxDetection

struct MultiBoxDetectionParam : Params<MultiBoxDetectionParam> {
  bool clip = true, force_suppress = false;
  float threshold = 0.01f, nms_threshold = 0.5f;
  int background_id = 0, nms_topk = -1;
  std::vector<double> variances{0.1, 0.1, 0.2, 0.2};
  static void Declare(ParamDecl<MultiBoxDetectionParam>& d) {
    d.field("clip", &MultiBoxDetectionParam::clip)
        .set_default(true)
        .describe("Clip the boxes to [0, 1].");
    d.field("threshold", &MultiBoxDetectionParam::threshold)
        .set_default(0.01f)
        .describe("A detection scoring below this is dropped.");
    d.field("background_id", &MultiBoxDetectionParam::background_id)
        .set_default(0)
        .describe("The background class of cls_prob, never detected.");
    d.field("nms_threshold", &MultiBoxDetectionParam::nms_threshold)
        .set_default(0.5f)
        .describe("Suppression IoU threshold; outside (0, 1] no suppression.");
    d.field("force_suppress", &MultiBoxDetectionParam::force_suppress)
        .set_default(false)
        .describe("Suppress across classes (else within a class).");
    d.field("variances", &MultiBoxDetectionParam::variances)
        .set_default({0.1, 0.1, 0.2, 0.2})
        .describe("The box regression is multiplied by these (x, y, w, h).");
    d.field("nms_topk", &MultiBoxDetectionParam::nms_topk)
        .set_default(-1)
        .describe("Only the nms_topk best detections take part; -1: all.");
  }
};

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

void DetectionForward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                      const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<MultiBoxDetectionParam>(attrs);
  const std::vector<double> v = Variances(attrs, p.variances);
  const int64_t batch = in[0].shape()[0], classes = in[0].shape()[1], n = in[0].shape()[2];
  ForFloatAndDouble(attrs, in[0].dtype(), "MultiBoxDetection", [&](auto zero) {
    using T = decltype(zero);
    const T* anchors = in[2].dptr<T>();
    std::vector<double> rows;
    for (int64_t b = 0; b < batch; ++b) {
      const T* prob = in[0].dptr<T>() + b * classes * n;
      const T* loc = in[1].dptr<T>() + b * n * 4;
      // Each anchor's best class (the background excluded) and its box.
      std::vector<std::array<double, 6>> det;
      for (int64_t i = 0; i < n; ++i) {
        double score = -1;
        int64_t id = -1;
        for (int64_t j = 0; j < classes; ++j)
          if (j != p.background_id && double(prob[j * n + i]) > score) {
            score = double(prob[j * n + i]);
            id = j;
          }
        if (id < 0 || score < p.threshold) continue;
        const T* a = anchors + 4 * i;
        const double aw = double(a[2]) - double(a[0]), ah = double(a[3]) - double(a[1]);
        const double ax = (double(a[0]) + double(a[2])) / 2, ay = (double(a[1]) + double(a[3])) / 2;
        const double ox = double(loc[4 * i]) * v[0] * aw + ax;
        const double oy = double(loc[4 * i + 1]) * v[1] * ah + ay;
        const double ow = std::exp(double(loc[4 * i + 2]) * v[2]) * aw / 2;
        const double oh = std::exp(double(loc[4 * i + 3]) * v[3]) * ah / 2;
        auto c = [&](double x) { return p.clip ? std::clamp(x, 0.0, 1.0) : x; };
        // Output classes count from 0 without the background.
        const double cls = double(id > p.background_id ? id - 1 : id);
        det.push_back({cls, score, c(ox - ow), c(oy - oh), c(ox + ow), c(oy + oh)});
      }
      const bool nms = p.nms_threshold > 0 && p.nms_threshold <= 1;
      if (nms) {
        std::stable_sort(det.begin(), det.end(),
                         [](const auto& x, const auto& y) { return x[1] > y[1]; });
        if (p.nms_topk > 0 && int64_t(det.size()) > p.nms_topk)
          for (size_t i = size_t(p.nms_topk); i < det.size(); ++i) det[i][0] = -1;
        const size_t keep = p.nms_topk > 0 ? std::min(det.size(), size_t(p.nms_topk)) : det.size();
        for (size_t i = 0; i < keep; ++i) {
          if (det[i][0] < 0) continue;
          for (size_t j = i + 1; j < keep; ++j)
            if (det[j][0] >= 0 && (p.force_suppress || det[i][0] == det[j][0]) &&
                CornerIoU(det[i].data() + 2, det[j].data() + 2) >= p.nms_threshold)
              det[j][0] = -1;
        }
      }
      for (int64_t i = 0; i < n; ++i)
        for (int k = 0; k < 6; ++k)
          rows.push_back(size_t(i) < det.size() ? det[size_t(i)][size_t(k)] : -1.0);
    }
    T* y = out[0].dptr<T>();
    for (size_t i = 0; i < rows.size(); ++i)
      y[i] = req[0] == kAddTo ? T(double(y[i]) + rows[i]) : T(rows[i]);
  });
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
    .set_attr<FCompute>(kFComputeCPU, PriorForward)
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
    .set_attr<FCompute>(kFComputeCPU, TargetForward)
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
    .set_attr<FCompute>(kFComputeCPU, DetectionForward)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>&) {
      return MakeZeroGradNodes(n);
    });

}  // namespace tessera::op
