// SSD's anchor ops (MXNet's contrib.MultiBoxPrior, MultiBoxTarget,
// MultiBoxDetection): parameters and kernels, shared by the CPU
// (multibox_ops.cc) and GPU (multibox_ops.cu) registrations. The prior is a
// thread per anchor; the target and the detection a thread per image, in
// scratch of its own (correct on the GPU, not yet fast), so the CPU's tests
// check the arithmetic the GPU runs.
#pragma once

#include <math.h>

#include <cstdint>
#include <vector>

#include "engine/resource/random_stream.h"
#include "ops/nn/box_ops-inl.h"
#include "ops/nn/nn_common.h"
#include "ops/tensor/host_values.h"
#include "ops/tensor/merge_sort-inl.h"

namespace tessera::op {

inline std::vector<double> Variances(const NodeAttrs& attrs, const std::vector<double>& v) {
  TS_CHECK(v.size() == 4) << OpLabel(attrs) << ": variances has " << v.size()
                          << " values; it needs 4";
  return v;
}

// std::max and std::min's rules (the first argument when neither is less),
// in device code too.
TS_XINLINE double MaxOf(double a, double b) {
  return a < b ? b : a;
}
TS_XINLINE double MinOf(double a, double b) {
  return b < a ? b : a;
}
TS_XINLINE double Clamp01(double v) {
  return v < 0.0 ? 0.0 : 1.0 < v ? 1.0 : v;
}

// IoU of corner boxes; 0 when the union is empty (MXNet's safe division).
template <typename A, typename B>
TS_XINLINE double CornerIoU(const A* a, const B* b) {
  const double w =
      MaxOf(0.0, MinOf(double(a[2]), double(b[2])) - MaxOf(double(a[0]), double(b[0])));
  const double h =
      MaxOf(0.0, MinOf(double(a[3]), double(b[3])) - MaxOf(double(a[1]), double(b[1])));
  const double i = w * h;
  const double u = (double(a[2]) - double(a[0])) * (double(a[3]) - double(a[1])) +
                   (double(b[2]) - double(b[0])) * (double(b[3]) - double(b[1])) - i;
  return u <= 0 ? 0.0 : i / u;
}

// Index a before index b: a's key is smaller (ascending).
struct KeyBelow {
  const double* key;
  TS_XINLINE bool operator()(int64_t a, int64_t b) const { return key[a] < key[b]; }
};

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

inline int64_t AnchorsPerCell(const NodeAttrs& attrs) {
  const auto& p = ParamsOf<MultiBoxPriorParam>(attrs);
  TS_CHECK(!p.sizes.empty() && !p.ratios.empty())
      << OpLabel(attrs) << ": sizes and ratios need one value or more";
  TS_CHECK(p.steps.size() == 2 && p.offsets.size() == 2)
      << OpLabel(attrs) << ": steps and offsets need 2 values (y, x)";
  return int64_t(p.sizes.size() + p.ratios.size()) - 1;
}

struct PriorGeom {
  int64_t H, W, A, sizes;
  double sy, sx, oy, ox;
  bool clip;
};

// Anchor i (cell i / A, row-major; anchor i % A: every size with the first
// ratio, then the first size with every other ratio), [xmin, ymin, xmax,
// ymax]. sr: the sizes, then the ratios.
struct PriorBox {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, PriorGeom g, const double* sr, T* y, OpReqType req) {
    const int64_t a = i % g.A, cell = i / g.A, r = cell / g.W, c = cell % g.W;
    const double cy = (double(r) + g.oy) * g.sy, cx = (double(c) + g.ox) * g.sx;
    const double size = a < g.sizes ? sr[a] : sr[0];
    const double ratio = a < g.sizes ? sr[g.sizes] : sr[g.sizes + a - g.sizes + 1];
    const double w = size * double(g.H) / double(g.W) * sqrt(ratio) / 2;
    const double h = size / sqrt(ratio) / 2;
    const double v[4] = {cx - w, cy - h, cx + w, cy + h};
    for (int k = 0; k < 4; ++k) {
      const double b = g.clip ? Clamp01(v[k]) : v[k];
      y[4 * i + k] = req == kAddTo ? T(double(y[4 * i + k]) + b) : T(b);
    }
  }
};

template <typename xpu>
void PriorForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<MultiBoxPriorParam>(attrs);
  PriorGeom g;
  g.H = in[0].shape()[2];
  g.W = in[0].shape()[3];
  g.A = AnchorsPerCell(attrs);
  g.sizes = int64_t(p.sizes.size());
  const bool steps = p.steps[0] > 0 && p.steps[1] > 0;
  g.sy = steps ? p.steps[0] : 1.0 / double(g.H);
  g.sx = steps ? p.steps[1] : 1.0 / double(g.W);
  g.oy = p.offsets[0];
  g.ox = p.offsets[1];
  g.clip = p.clip;
  std::vector<double> sr = p.sizes;
  sr.insert(sr.end(), p.ratios.begin(), p.ratios.end());
  const double* dsr = ArrayForKernels<xpu>(ctx, sr);
  ForFloatAndDouble(attrs, out[0].dtype(), "MultiBoxPrior", [&](auto zero) {
    using T = decltype(zero);
    Kernel<PriorBox, xpu>::Launch(ctx.run_ctx, g.H * g.W * g.A, g, dsr, out[0].dptr<T>(), req[0]);
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

struct TargetArgs {
  double overlap_threshold, ignore_label, negative_mining_ratio, negative_mining_thresh;
  double v[4];
};

// Scratch per image, in 8-byte units: the overlaps (n x boxes), each
// anchor's best overlap and mining key, then flags, matches, candidates,
// the sort's scratch (n each) and the boxes' taken flags.
TS_XINLINE int64_t TargetScratch(int64_t n, int64_t boxes) {
  return n * (boxes + 2) + 4 * n + boxes;
}

// One image: the anchors' flags (1 positive, 0 negative, -1 ignored) and
// matched boxes, by MXNet's rule: each box first takes its best free anchor
// (greedily, best overlap first), then every other anchor whose best overlap
// passes the threshold, then negatives (all, or mined: the lowest
// background probability first); then the image's targets.
struct TargetImage {
  template <typename T>
  TS_XINLINE static void Map(int64_t b, TargetArgs p, const T* anchors, int64_t n, const T* labels,
                             int64_t boxes, int64_t width, const T* cls_pred, int64_t classes,
                             T* loc, OpReqType rl, T* mask, OpReqType rm, T* cls_t, OpReqType rc,
                             int64_t* scratch) {
    double* iou = reinterpret_cast<double*>(scratch + b * TargetScratch(n, boxes));
    double* best = iou + n * boxes;
    double* key = best + n;
    int64_t* flag = reinterpret_cast<int64_t*>(key + n);
    int64_t* match = flag + n;
    int64_t* cand = match + n;
    int64_t* tmp = cand + n;
    int64_t* gt_done = tmp + n;
    const T* label = labels + b * boxes * width;
    Match(p, anchors, n, label, boxes, width, cls_pred + b * classes * n, classes, iou, best, key,
          flag, match, cand, tmp, gt_done);
    for (int64_t j = 0; j < n; ++j) {
      double t[4] = {0, 0, 0, 0}, m = 0, c = p.ignore_label;
      if (flag[j] == 0) c = 0;
      if (flag[j] == 1) {
        const T* g = label + match[j] * width;
        c = double(g[0]) + 1;  // 0 is the background
        const T* a = anchors + 4 * j;
        const double aw = double(a[2]) - double(a[0]), ah = double(a[3]) - double(a[1]);
        const double ax = (double(a[0]) + double(a[2])) / 2, ay = (double(a[1]) + double(a[3])) / 2;
        const double gw = double(g[3]) - double(g[1]), gh = double(g[4]) - double(g[2]);
        const double gx = (double(g[1]) + double(g[3])) / 2, gy = (double(g[2]) + double(g[4])) / 2;
        t[0] = (gx - ax) / aw / p.v[0];
        t[1] = (gy - ay) / ah / p.v[1];
        t[2] = log(gw / aw) / p.v[2];
        t[3] = log(gh / ah) / p.v[3];
        m = 1;
      }
      const int64_t at = (b * n + j) * 4;
      for (int k = 0; k < 4; ++k) {
        AssignReqAt(loc[at + k], T(t[k]), rl);
        AssignReqAt(mask[at + k], T(m), rm);
      }
      AssignReqAt(cls_t[b * n + j], T(c), rc);
    }
  }

  template <typename T>
  TS_XINLINE static void Match(const TargetArgs& p, const T* anchors, int64_t n, const T* label,
                               int64_t boxes, int64_t width, const T* cls, int64_t classes,
                               double* iou, double* best, double* key, int64_t* flag,
                               int64_t* match, int64_t* cand, int64_t* tmp, int64_t* gt_done) {
    int64_t valid = 0;
    while (valid < boxes && double(label[valid * width]) != -1.0) ++valid;
    for (int64_t j = 0; j < n; ++j) flag[j] = match[j] = -1;
    if (valid == 0) return;
    for (int64_t j = 0; j < n; ++j) {
      best[j] = -1.0;
      for (int64_t k = 0; k < valid; ++k)
        iou[j * valid + k] = CornerIoU(anchors + 4 * j, label + k * width + 1);
    }
    for (int64_t k = 0; k < valid; ++k) gt_done[k] = 0;
    int64_t positives = 0;
    for (;;) {  // the best (anchor, box) pair among free anchors and boxes
      int64_t ba = -1, bg = -1;
      double m = 1e-6;
      for (int64_t j = 0; j < n; ++j) {
        if (flag[j] == 1) continue;
        for (int64_t k = 0; k < valid; ++k)
          if (!gt_done[k] && iou[j * valid + k] > m) {
            m = iou[j * valid + k];
            ba = j;
            bg = k;
          }
      }
      if (ba < 0) break;
      flag[ba] = 1;
      match[ba] = bg;
      best[ba] = m;
      gt_done[bg] = 1;
      ++positives;
    }
    for (int64_t j = 0; j < n; ++j) {
      if (flag[j] == 1) continue;
      int64_t bg = 0;
      for (int64_t k = 1; k < valid; ++k)
        if (iou[j * valid + k] > iou[j * valid + bg]) bg = k;
      best[j] = iou[j * valid + bg];
      if (p.overlap_threshold > 0 && best[j] > p.overlap_threshold) {
        flag[j] = 1;
        match[j] = bg;
        ++positives;
      }
    }
    if (p.negative_mining_ratio <= 0) {
      for (int64_t j = 0; j < n; ++j)
        if (flag[j] != 1) flag[j] = 0;
      return;
    }
    int64_t want = int64_t(double(positives) * p.negative_mining_ratio);
    if (want > n - positives) want = n - positives;
    int64_t count = 0;
    for (int64_t j = 0; j < n; ++j) {
      if (flag[j] != -1 || best[j] >= p.negative_mining_thresh) continue;
      double mx = double(cls[j]);
      for (int64_t c = 1; c < classes; ++c) mx = MaxOf(mx, double(cls[c * n + j]));
      double sum = 0;
      for (int64_t c = 0; c < classes; ++c) sum += exp(double(cls[c * n + j]) - mx);
      key[j] = exp(double(cls[j]) - mx) / sum;  // the background's probability
      cand[count++] = j;
    }
    StableSortIndices(cand, tmp, count, KeyBelow{key});
    if (want > count) want = count;
    for (int64_t i = 0; i < want; ++i) flag[cand[i]] = 0;
  }
};

template <typename xpu>
void TargetForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<MultiBoxTargetParam>(attrs);
  const std::vector<double> v = Variances(attrs, p.variances);
  const TargetArgs args{p.overlap_threshold,
                        p.ignore_label,
                        p.negative_mining_ratio,
                        p.negative_mining_thresh,
                        {v[0], v[1], v[2], v[3]}};
  const int64_t n = in[0].shape()[1], batch = in[1].shape()[0], boxes = in[1].shape()[1],
                width = in[1].shape()[2], classes = in[2].shape()[1];
  int64_t* scratch =
      ctx.requested.at(0).get_space_typed<int64_t>(size_t(batch * TargetScratch(n, boxes) + 1));
  ForFloatAndDouble(attrs, in[0].dtype(), "MultiBoxTarget", [&](auto zero) {
    using T = decltype(zero);
    Kernel<TargetImage, xpu>::Launch(ctx.run_ctx, batch, args, in[0].dptr<T>(), n, in[1].dptr<T>(),
                                     boxes, width, in[2].dptr<T>(), classes, out[0].dptr<T>(),
                                     req[0], out[1].dptr<T>(), req[1], out[2].dptr<T>(), req[2],
                                     scratch);
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

struct DetectionArgs {
  bool clip, force_suppress;
  double threshold, nms_threshold;
  int64_t background_id, nms_topk;
  double v[4];
};

// Detection a before detection b: a higher score (rows of 6, the score 2nd).
struct DetScoreAbove {
  const double* det;
  TS_XINLINE bool operator()(int64_t a, int64_t b) const { return det[a * 6 + 1] > det[b * 6 + 1]; }
};

// One image, in 8 n units of scratch (its detections as rows of 6 doubles,
// their order and the sort's scratch): each anchor's best class but the
// background, decoded, then sorted by score and suppressed per class.
struct DetectionImage {
  template <typename T>
  TS_XINLINE static void Map(int64_t b, DetectionArgs p, const T* cls_prob, const T* loc_pred,
                             const T* anchors, int64_t classes, int64_t n, T* y, OpReqType req,
                             int64_t* scratch) {
    double* det = reinterpret_cast<double*>(scratch + b * 8 * n);
    int64_t* order = scratch + b * 8 * n + 6 * n;
    int64_t* tmp = order + n;
    const T* prob = cls_prob + b * classes * n;
    const T* loc = loc_pred + b * n * 4;
    int64_t m = 0;
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
      const double ox = resource::MulAdd(double(loc[4 * i]) * p.v[0], aw, ax);
      const double oy = resource::MulAdd(double(loc[4 * i + 1]) * p.v[1], ah, ay);
      const double ow = exp(double(loc[4 * i + 2]) * p.v[2]) * aw / 2;
      const double oh = exp(double(loc[4 * i + 3]) * p.v[3]) * ah / 2;
      double* d = det + m * 6;
      d[0] = double(id > p.background_id ? id - 1 : id);  // classes count without the background
      d[1] = score;
      const double box[4] = {ox - ow, oy - oh, ox + ow, oy + oh};
      for (int k = 0; k < 4; ++k) d[2 + k] = p.clip ? Clamp01(box[k]) : box[k];
      order[m] = m;
      ++m;
    }
    if (p.nms_threshold > 0 && p.nms_threshold <= 1) {
      StableSortIndices(order, tmp, m, DetScoreAbove{det});
      int64_t keep = m;
      if (p.nms_topk > 0 && m > p.nms_topk) {
        for (int64_t s = p.nms_topk; s < m; ++s) det[order[s] * 6] = -1;
        keep = p.nms_topk;
      }
      for (int64_t s = 0; s < keep; ++s) {
        const double* di = det + order[s] * 6;
        if (di[0] < 0) continue;
        for (int64_t t = s + 1; t < keep; ++t) {
          double* dj = det + order[t] * 6;
          if (dj[0] >= 0 && (p.force_suppress || di[0] == dj[0]) &&
              CornerIoU(di + 2, dj + 2) >= p.nms_threshold)
            dj[0] = -1;
        }
      }
    }
    for (int64_t i = 0; i < n; ++i)
      for (int k = 0; k < 6; ++k) {
        const double v = i < m ? det[order[i] * 6 + k] : -1.0;
        T& o = y[(b * n + i) * 6 + k];
        o = req == kAddTo ? T(double(o) + v) : T(v);
      }
  }
};

template <typename xpu>
void DetectionForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<MultiBoxDetectionParam>(attrs);
  const std::vector<double> v = Variances(attrs, p.variances);
  const DetectionArgs args{
      p.clip,     p.force_suppress,        p.threshold, p.nms_threshold, p.background_id,
      p.nms_topk, {v[0], v[1], v[2], v[3]}};
  const int64_t batch = in[0].shape()[0], classes = in[0].shape()[1], n = in[0].shape()[2];
  int64_t* scratch = ctx.requested.at(0).get_space_typed<int64_t>(size_t(batch * 8 * n + 1));
  ForFloatAndDouble(attrs, in[0].dtype(), "MultiBoxDetection", [&](auto zero) {
    using T = decltype(zero);
    Kernel<DetectionImage, xpu>::Launch(ctx.run_ctx, batch, args, in[0].dptr<T>(), in[1].dptr<T>(),
                                        in[2].dptr<T>(), classes, n, out[0].dptr<T>(), req[0],
                                        scratch);
  });
}

}  // namespace tessera::op
