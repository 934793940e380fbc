// contrib.Proposal's parameters and kernel, shared by the CPU (proposal.cc)
// and GPU (proposal.cu) registrations: a thread per image, in scratch of its
// own (correct on the GPU, not yet fast), so the CPU's tests check the
// arithmetic the GPU runs. Image sizes are checked on the host first.
#pragma once

#include <math.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/resource/random_stream.h"
#include "ops/nn/multibox_ops-inl.h"
#include "ops/nn/nn_common.h"
#include "ops/tensor/host_values.h"
#include "ops/tensor/merge_sort-inl.h"

namespace tessera::op {

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

inline int64_t AnchorCount(const ProposalParam& p) {
  return int64_t(p.scales.size() * p.ratios.size());
}

// The anchors of one cell at the origin, 4 values each: ratio-major, then
// scale (MXNet's generate_anchors).
inline std::vector<double> BaseAnchors(const ProposalParam& p) {
  const double s = p.feature_stride, w = s, h = s, cx = (s - 1) / 2, cy = (s - 1) / 2;
  std::vector<double> out;
  for (double ratio : p.ratios)
    for (double scale : p.scales) {
      const double size_ratios = std::floor(w * h / ratio);
      const double nw = std::floor(std::sqrt(size_ratios) + 0.5) * scale;
      const double nh = std::floor(nw / scale * ratio + 0.5) * scale;
      for (double v : {cx - (nw - 1) / 2, cy - (nh - 1) / 2, cx + (nw - 1) / 2, cy + (nh - 1) / 2})
        out.push_back(v);
    }
  return out;
}

struct ProposalArgs {
  int64_t pre_nms, post_nms, min_size, stride;
  double threshold;
  bool iou_loss;
};

// Box a before box b: a higher score (rows of 5, the score last).
struct ProposalAbove {
  const double* box;
  TS_XINLINE bool operator()(int64_t a, int64_t b) const { return box[a * 5 + 4] > box[b * 5 + 4]; }
};

// Scratch per image, in 8-byte units: its boxes (5 doubles each), their
// order, the sort's scratch, the suppressed flags, the kept boxes.
TS_XINLINE int64_t ProposalScratch(int64_t count, int64_t post) {
  return 8 * count + post;
}

// Image b: every anchor moved, clipped and scored, sorted, suppressed; its
// rows of the outputs (the kept boxes repeated when fewer than asked).
struct ProposalImage {
  template <typename T>
  TS_XINLINE static void Map(int64_t b, ProposalArgs p, const double* base, const T* cls_prob,
                             const T* bbox_pred, const T* im_info, int64_t na, int64_t H, int64_t W,
                             T* rois, OpReqType r0, T* scores, OpReqType r1, int64_t* scratch) {
    const int64_t count = H * W * na;
    double* boxes = reinterpret_cast<double*>(scratch + b * ProposalScratch(count, p.post_nms));
    int64_t* order = reinterpret_cast<int64_t*>(boxes + 5 * count);
    int64_t* tmp = order + count;
    int64_t* gone = tmp + count;
    int64_t* kept = gone + count;
    const T* info = im_info + b * 3;
    MoveAnchors(p, base, cls_prob + (b * 2 * na + na) * H * W, bbox_pred + b * 4 * na * H * W, info,
                na, H, W, boxes);
    for (int64_t i = 0; i < count; ++i) order[i] = i;
    StableSortIndices(order, tmp, count, ProposalAbove{boxes});
    const int64_t pre = p.pre_nms > 0 && p.pre_nms < count ? p.pre_nms : count;
    const int64_t post = p.post_nms < pre ? p.post_nms : pre;
    for (int64_t j = 0; j < pre; ++j) gone[j] = 0;
    int64_t n_kept = 0;
    for (int64_t i = 0; i < pre && n_kept < post; ++i) {
      if (gone[i]) continue;
      const double* bi = boxes + order[i] * 5;
      kept[n_kept++] = order[i];
      for (int64_t j = i + 1; j < pre; ++j) {
        if (gone[j]) continue;
        const double* bj = boxes + order[j] * 5;
        const double w = MaxOf(0.0, MinOf(bi[2], bj[2]) - MaxOf(bi[0], bj[0]) + 1);
        const double h = MaxOf(0.0, MinOf(bi[3], bj[3]) - MaxOf(bi[1], bj[1]) + 1);
        const double inter = w * h;
        if (inter / (Area(bi) + Area(bj) - inter) > p.threshold) gone[j] = 1;
      }
    }
    for (int64_t i = 0; i < p.post_nms; ++i) {
      const double zero[5] = {0, 0, 0, 0, 0};
      const double* r = n_kept == 0 ? zero : boxes + kept[i % n_kept] * 5;
      const int64_t row = b * p.post_nms + i;
      const double vals[5] = {double(b), r[0], r[1], r[2], r[3]};
      for (int k = 0; k < 5; ++k) Put(rois[row * 5 + k], vals[k], r0);
      Put(scores[row], r[4], r1);
    }
  }

  TS_XINLINE static double Area(const double* b) { return (b[2] - b[0] + 1) * (b[3] - b[1] + 1); }

  template <typename T>
  TS_XINLINE static void Put(T& o, double v, OpReqType req) {
    if (req == kAddTo)
      o = T(double(o) + v);
    else if (req != kNullOp)
      o = T(v);
  }

  // boxes[(y W + x) na + a]: [x1, y1, x2, y2, score]; -1 scores beyond the
  // image and for boxes smaller than the minimum size.
  template <typename T>
  TS_XINLINE static void MoveAnchors(const ProposalArgs& p, const double* base, const T* fg,
                                     const T* deltas, const T* info, int64_t na, int64_t H,
                                     int64_t W, double* boxes) {
    const double ih = double(info[0]), iw = double(info[1]),
                 min_size = double(p.min_size) * double(info[2]);
    const int64_t real_h = int64_t(ih / double(p.stride)), real_w = int64_t(iw / double(p.stride));
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x)
        for (int64_t a = 0; a < na; ++a) {
          const double* b = base + 4 * a;
          const double ax1 = b[0] + double(x * p.stride), ay1 = b[1] + double(y * p.stride);
          const double ax2 = b[2] + double(x * p.stride), ay2 = b[3] + double(y * p.stride);
          const T* d = deltas + (a * 4 * H + y) * W + x;  // delta k at d[k H W]
          double x1, y1, x2, y2;
          if (p.iou_loss) {
            x1 = ax1 + double(d[0]);
            y1 = ay1 + double(d[H * W]);
            x2 = ax2 + double(d[2 * H * W]);
            y2 = ay2 + double(d[3 * H * W]);
          } else {
            const double w = ax2 - ax1 + 1, h = ay2 - ay1 + 1;
            const double cx = resource::MulAdd(double(d[0]), w, ax1 + (w - 1) / 2);
            const double cy = resource::MulAdd(double(d[H * W]), h, ay1 + (h - 1) / 2);
            const double pw = exp(double(d[2 * H * W])) * w, ph = exp(double(d[3 * H * W])) * h;
            x1 = cx - (pw - 1) / 2;
            y1 = cy - (ph - 1) / 2;
            x2 = cx + (pw - 1) / 2;
            y2 = cy + (ph - 1) / 2;
          }
          double* r = boxes + ((y * W + x) * na + a) * 5;
          r[0] = MaxOf(MinOf(x1, iw - 1), 0.0);
          r[1] = MaxOf(MinOf(y1, ih - 1), 0.0);
          r[2] = MaxOf(MinOf(x2, iw - 1), 0.0);
          r[3] = MaxOf(MinOf(y2, ih - 1), 0.0);
          r[4] = double(fg[(a * H + y) * W + x]);
          if (y >= real_h || x >= real_w) r[4] = -1;  // the padding beyond the image
          if (r[2] - r[0] + 1 < min_size || r[3] - r[1] + 1 < min_size) {
            r[0] -= min_size / 2;
            r[1] -= min_size / 2;
            r[2] += min_size / 2;
            r[3] += min_size / 2;
            r[4] = -1;
          }
        }
  }
};

template <typename xpu>
void ProposalForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<ProposalParam>(attrs);
  const Shape& cs = in[0].shape();
  const int64_t n = cs[0], na = cs[1] / 2, H = cs[2], W = cs[3];
  const std::vector<double> info = HostValues<xpu>(ctx.run_ctx, in[2]);
  for (int64_t b = 0; b < n; ++b)
    TS_CHECK(info[b * 3] / p.feature_stride <= double(H) &&
             info[b * 3 + 1] / p.feature_stride <= double(W))
        << OpLabel(attrs) << ": im_info of image " << b << " (" << info[b * 3] << " x "
        << info[b * 3 + 1] << ") is larger than the " << H << " x " << W
        << " score map covers at feature_stride " << p.feature_stride;
  const ProposalArgs args{p.rpn_pre_nms_top_n, p.rpn_post_nms_top_n, p.rpn_min_size,
                          p.feature_stride,    p.threshold,          p.iou_loss};
  const std::vector<double> base = BaseAnchors(p);
  const int64_t units = int64_t(base.size()) + n * ProposalScratch(H * W * na, args.post_nms);
  int64_t* space = ctx.requested.at(0).get_space_typed<int64_t>(size_t(units));
  CopyHostToSpace<xpu>(ctx, base.data(), base.size() * sizeof(double), space);
  ForFloatAndDouble(attrs, in[0].dtype(), "Proposal", [&](auto zero) {
    using T = decltype(zero);
    Kernel<ProposalImage, xpu>::Launch(ctx.run_ctx, n, args, reinterpret_cast<double*>(space),
                                       in[0].dptr<T>(), in[1].dptr<T>(), in[2].dptr<T>(), na, H, W,
                                       out[0].dptr<T>(), req[0], out[1].dptr<T>(), req[1],
                                       space + base.size());
  });
}

}  // namespace tessera::op
