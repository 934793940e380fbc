// Pooling over regions of interest (MXNet's): parameters, geometry and the
// element kernels, shared by the CPU (roi_ops.cc) and GPU (roi_ops.cu)
// registrations. ROIPooling takes the max over each bin of a rounded box
// (Fast R-CNN); contrib.ROIAlign averages bilinear samples over each bin
// (Mask R-CNN; position-sensitive and Detectron2's aligned variants). Boxes
// are rows [batch_index, x1, y1, x2, y2] in image coordinates, scaled to the
// feature map by spatial_scale; a negative batch index marks a padding box,
// whose output is zero. The boxes' images are checked on the host (on the
// GPU after a copy: the op waits for its stream once) and handed to the
// kernels in temp space. Forwards are a thread per output element; the data
// gradients a thread per (image, channel) plane taking its boxes in order,
// so no atomics and the CPU's order of sums.
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include "engine/op/float_dispatch.h"
#include "engine/op/kernel_launch.h"
#include "ops/nn/nn_common.h"
#include "ops/tensor/shape_strided-inl.h"

namespace tessera::op {

template <typename P>
inline void DeclareRoiFields(ParamDecl<P>& d) {
  d.field("pooled_size", &P::pooled_size).describe("The output's (height, width) per box.");
  d.field("spatial_scale", &P::spatial_scale)
      .set_range(0.f, 1.f)
      .describe("Feature map size over image size (1 / the total stride of the network).");
}

struct ROIPoolingParam : Params<ROIPoolingParam> {
  Shape pooled_size;
  float spatial_scale = 1;
  static void Declare(ParamDecl<ROIPoolingParam>& d) { DeclareRoiFields(d); }
};

struct ROIAlignParam : Params<ROIAlignParam> {
  Shape pooled_size;
  float spatial_scale = 1;
  int sample_ratio = -1;
  bool position_sensitive = false, aligned = false;
  static void Declare(ParamDecl<ROIAlignParam>& d) {
    DeclareRoiFields(d);
    d.field("sample_ratio", &ROIAlignParam::sample_ratio)
        .set_default(-1)
        .describe("Samples per bin along each axis; <= 0: ceil(box size / pooled size).");
    d.field("position_sensitive", &ROIAlignParam::position_sensitive)
        .set_default(false)
        .describe(
            "Bin (i, j) of output channel c reads input channel (c * ph + i) * pw + j "
            "(R-FCN); the output has C / (ph * pw) channels.");
    d.field("aligned", &ROIAlignParam::aligned)
        .set_default(false)
        .describe("Shift box corners by -0.5 pixel (Detectron2's centre-aligned ROIAlign).");
  }
};

// The geometry every ROI op checks: data (N, C, H, W), rois (R, 5) (ROIAlign
// also (R, 4), all on image 0), the output (R, C_out, PH, PW).
struct RoiGeom {
  int64_t n, c, h, w, r, cols, ph, pw, c_out;
};

template <typename P>
RoiGeom RoiGeomOf(const NodeAttrs& attrs, const Shape& data, const Shape& rois, bool four_ok,
                  bool sensitive) {
  const P& p = ParamsOf<P>(attrs);
  TS_CHECK(data.ndim() == 4) << OpLabel(attrs) << ": data has shape " << data
                             << "; it must be NCHW (4 axes)";
  TS_CHECK(rois.ndim() == 2 && (rois[1] == 5 || (four_ok && rois[1] == 4)))
      << OpLabel(attrs) << ": rois has shape " << rois << "; it must be (R, 5)"
      << (four_ok ? " or (R, 4)" : "") << ": [batch_index, x1, y1, x2, y2] per row";
  TS_CHECK(p.pooled_size.ndim() == 2 && p.pooled_size[0] >= 1 && p.pooled_size[1] >= 1)
      << OpLabel(attrs) << ": pooled_size " << p.pooled_size << " must be (height, width) >= 1";
  RoiGeom g{data[0], data[1],          data[2],          data[3], rois[0],
            rois[1], p.pooled_size[0], p.pooled_size[1], data[1]};
  if (sensitive) {
    TS_CHECK(g.c % (g.ph * g.pw) == 0)
        << OpLabel(attrs) << ": position_sensitive needs channels divisible by " << g.ph * g.pw
        << " (pooled_size " << p.pooled_size << "), data has " << g.c;
    g.c_out = g.c / (g.ph * g.pw);
  }
  return g;
}

// A box's image in the batch: -1 for a padding box; an index past the
// batch is an error (read on the host before any work starts).
template <typename T>
std::vector<int64_t> BoxImages(const NodeAttrs& attrs, const RoiGeom& g, const T* rois) {
  std::vector<int64_t> img(size_t(g.r), 0);
  if (g.cols == 4) return img;
  for (int64_t i = 0; i < g.r; ++i) {
    const double b = double(rois[i * g.cols]);
    TS_CHECK(b < double(g.n)) << OpLabel(attrs) << ": box " << i << " names image " << b
                              << " of a batch of " << g.n;
    img[size_t(i)] = b < 0 ? -1 : int64_t(b);
  }
  return img;
}

// The boxes' images on xpu (temp space), checked on the host first.
template <typename xpu>
struct RoiBoxes {
  template <typename T>
  static const int64_t* Images(const NodeAttrs& attrs, const OpContext& ctx, const RoiGeom& g,
                               const TBlob& rois);
};

// ---- ROIPooling: outputs (out, max_idx); max_idx is the flat data index of
// each bin's maximum (-1 for an empty bin), the backward's route.

TS_XINLINE int64_t ClampRoi(int64_t v, int64_t hi) {
  return v < 0 ? 0 : (v > hi ? hi : v);
}

struct RoiPoolForwardElem {
  template <typename T>
  TS_XINLINE static void Map(int64_t o, RoiGeom g, float scale, const T* x, const T* rois,
                             const int64_t* img, T* y, OpReqType ry, int64_t* arg, OpReqType ra) {
    const int64_t b = o % g.pw, a = o / g.pw % g.ph, c = o / (g.pw * g.ph) % g.c,
                  i = o / (g.pw * g.ph * g.c);
    const T* box = rois + i * g.cols;
    const int64_t x1 = llround(double(box[1]) * scale), y1 = llround(double(box[2]) * scale);
    const int64_t x2 = llround(double(box[3]) * scale), y2 = llround(double(box[4]) * scale);
    const double bh = double(y2 - y1 + 1 > 1 ? y2 - y1 + 1 : 1) / double(g.ph);
    const double bw = double(x2 - x1 + 1 > 1 ? x2 - x1 + 1 : 1) / double(g.pw);
    const int64_t h0 = ClampRoi(int64_t(floor(a * bh)) + y1, g.h);
    const int64_t h1 = ClampRoi(int64_t(ceil((a + 1) * bh)) + y1, g.h);
    const int64_t w0 = ClampRoi(int64_t(floor(b * bw)) + x1, g.w);
    const int64_t w1 = ClampRoi(int64_t(ceil((b + 1) * bw)) + x1, g.w);
    T best = T(0);
    int64_t where = -1;
    if (img[i] >= 0 && h1 > h0 && w1 > w0) {
      const int64_t plane = (img[i] * g.c + c) * g.h * g.w;
      for (int64_t hh = h0; hh < h1; ++hh)
        for (int64_t ww = w0; ww < w1; ++ww)
          if (where < 0 || x[plane + hh * g.w + ww] > best) {
            best = x[plane + hh * g.w + ww];
            where = plane + hh * g.w + ww;
          }
    }
    const T v = where < 0 ? T(0) : best;
    if (ry == kAddTo)
      y[o] += v;
    else if (ry != kNullOp)
      y[o] = v;
    if (ra != kNullOp) arg[o] = where;
  }
};

// Plane p = (image, channel) of the data gradient: the output gradients
// routed to its elements, boxes and bins in order.
struct RoiPoolBackwardPlane {
  template <typename T>
  TS_XINLINE static void Map(int64_t p, RoiGeom g, const T* dy, const int64_t* arg, T* dx,
                             OpReqType req) {
    const int64_t hw = g.h * g.w, c = p % g.c;
    T* plane = GradPlane(dx, p, hw, req);
    const int64_t bins = g.ph * g.pw;
    for (int64_t i = 0; i < g.r; ++i)
      for (int64_t k = 0; k < bins; ++k) {
        const int64_t o = (i * g.c + c) * bins + k;
        if (arg[o] >= p * hw && arg[o] < (p + 1) * hw) plane[arg[o] - p * hw] += dy[o];
      }
  }
};

template <typename xpu>
void RoiPoolForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const RoiGeom g = RoiGeomOf<ROIPoolingParam>(attrs, in[0].shape(), in[1].shape(), false, false);
  const float scale = ParamsOf<ROIPoolingParam>(attrs).spatial_scale;
  ForFloatAndDouble(attrs, in[0].dtype(), "ROIPooling", [&](auto zero) {
    using T = decltype(zero);
    const int64_t* img = RoiBoxes<xpu>::template Images<T>(attrs, ctx, g, in[1]);
    Kernel<RoiPoolForwardElem, xpu>::Launch(ctx.run_ctx, out[0].Size(), g, scale, in[0].dptr<T>(),
                                            in[1].dptr<T>(), img, out[0].dptr<T>(), req[0],
                                            out[1].dptr<int64_t>(), req[1]);
  });
}

// in: dOut, max_idx, data, rois; out: d data (routed to the maxima), d rois.
template <typename xpu>
void RoiPoolBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const RoiGeom g = RoiGeomOf<ROIPoolingParam>(attrs, in[2].shape(), in[3].shape(), false, false);
  ForFloatAndDouble(attrs, in[0].dtype(), "_backward_ROIPooling", [&](auto zero) {
    using T = decltype(zero);
    if (req[0] != kNullOp)
      Kernel<RoiPoolBackwardPlane, xpu>::Launch(ctx.run_ctx, g.n * g.c, g, in[0].dptr<T>(),
                                                in[1].dptr<int64_t>(), out[0].dptr<T>(), req[0]);
  });
  if (req[1] != kNullOp && req[1] != kAddTo) ZeroBlob<xpu>(ctx.run_ctx, out[1]);
}

// ---- ROIAlign

// The sampling of bin (a, b) of one box (MXNet's: samples outside [-1,
// size] contribute nothing), by value for the kernels.
struct RoiAlignSpec {
  float spatial_scale;
  int sample_ratio;
  bool aligned, sensitive;
};

// Calls fn(position in the plane, weight) for the 4 bilinear taps of every
// sample of bin (a, b) of `box` ([x1, y1, x2, y2]), the weights divided by
// the sample count.
template <typename T, typename F>
TS_XINLINE void ForEachAlignTap(const RoiAlignSpec& p, const RoiGeom& g, const T* box, int64_t a,
                                int64_t b, F&& fn) {
  const double off = p.aligned ? 0.5 : 0.0, s = p.spatial_scale;
  const double x1 = double(box[0]) * s - off, y1 = double(box[1]) * s - off;
  double rw = double(box[2]) * s - off - x1, rh = double(box[3]) * s - off - y1;
  if (!p.aligned) {
    rw = rw > 1.0 ? rw : 1.0;
    rh = rh > 1.0 ? rh : 1.0;
  }
  const double bh = rh / double(g.ph), bw = rw / double(g.pw);
  const int64_t gh = p.sample_ratio > 0 ? p.sample_ratio : int64_t(ceil(rh / double(g.ph)));
  const int64_t gw = p.sample_ratio > 0 ? p.sample_ratio : int64_t(ceil(rw / double(g.pw)));
  const double count = double(gh * gw > 1 ? gh * gw : 1);
  for (int64_t iy = 0; iy < gh; ++iy)
    for (int64_t ix = 0; ix < gw; ++ix) {
      double y = y1 + double(a) * bh + (double(iy) + 0.5) * bh / double(gh);
      double x = x1 + double(b) * bw + (double(ix) + 0.5) * bw / double(gw);
      if (y < -1.0 || y > double(g.h) || x < -1.0 || x > double(g.w)) continue;
      y = y > 0.0 ? y : 0.0;
      x = x > 0.0 ? x : 0.0;
      int64_t yl = int64_t(y), xl = int64_t(x), yh = yl + 1, xh = xl + 1;
      if (yl >= g.h - 1) {
        yh = yl = g.h - 1;
        y = double(yl);
      }
      if (xl >= g.w - 1) {
        xh = xl = g.w - 1;
        x = double(xl);
      }
      const double ly = y - double(yl), lx = x - double(xl), hy = 1 - ly, hx = 1 - lx;
      fn(yl * g.w + xl, hy * hx / count);
      fn(yl * g.w + xh, hy * lx / count);
      fn(yh * g.w + xl, ly * hx / count);
      fn(yh * g.w + xh, ly * lx / count);
    }
}

struct RoiAlignForwardElem {
  template <typename T>
  TS_XINLINE static void Map(int64_t o, RoiGeom g, RoiAlignSpec p, const T* x, const T* rois,
                             const int64_t* img, T* y, OpReqType req) {
    const int64_t b = o % g.pw, a = o / g.pw % g.ph, c = o / (g.pw * g.ph) % g.c_out,
                  i = o / (g.pw * g.ph * g.c_out);
    const bool add = req == kAddTo;
    if (img[i] < 0) {
      y[o] = add ? y[o] : T(0);
      return;
    }
    const int64_t cin = p.sensitive ? (c * g.ph + a) * g.pw + b : c;
    const T* plane = x + (img[i] * g.c + cin) * g.h * g.w;
    const T* box = rois + i * g.cols + (g.cols == 5 ? 1 : 0);
    double v = 0;
    ForEachAlignTap(p, g, box, a, b, [&](int64_t at, double w) { v += w * double(plane[at]); });
    y[o] = T(add ? double(y[o]) + v : v);
  }
};

// Plane p = (image, input channel) of the data gradient: every bin that
// reads it, boxes in order.
struct RoiAlignBackwardPlane {
  template <typename T>
  TS_XINLINE static void Map(int64_t p, RoiGeom g, RoiAlignSpec s, const T* dy, const T* rois,
                             const int64_t* img, T* dx, OpReqType req) {
    const int64_t image = p / g.c, cin = p % g.c;
    T* plane = GradPlane(dx, p, g.h * g.w, req);
    // The bins that read input channel cin: all of channel cin's, or the
    // one bin position-sensitive pooling maps to it.
    const int64_t c = s.sensitive ? cin / (g.ph * g.pw) : cin;
    const int64_t first = s.sensitive ? cin % (g.ph * g.pw) : 0;
    const int64_t last = s.sensitive ? first + 1 : g.ph * g.pw;
    for (int64_t i = 0; i < g.r; ++i) {
      if (img[i] != image) continue;
      const T* box = rois + i * g.cols + (g.cols == 5 ? 1 : 0);
      for (int64_t k = first; k < last; ++k) {
        const int64_t a = k / g.pw, b = k % g.pw;
        const double go = double(dy[((i * g.c_out + c) * g.ph + a) * g.pw + b]);
        ForEachAlignTap(s, g, box, a, b,
                        [&](int64_t at, double w) { plane[at] = T(double(plane[at]) + w * go); });
      }
    }
  }
};

// kForward: out = the bins' averages; else in dOut -> d data (the adjoint).
template <typename xpu, bool kForward>
void RoiAlignCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<ROIAlignParam>(attrs);
  const TBlob& data = kForward ? in[0] : out[0];
  const TBlob& rois = kForward ? in[1] : in[2];
  const RoiGeom g =
      RoiGeomOf<ROIAlignParam>(attrs, data.shape(), rois.shape(), true, p.position_sensitive);
  const RoiAlignSpec s{p.spatial_scale, p.sample_ratio, p.aligned, p.position_sensitive};
  ForFloatAndDouble(attrs, data.dtype(), "ROIAlign", [&](auto zero) {
    using T = decltype(zero);
    if (req[0] == kNullOp) return;
    const int64_t* img = RoiBoxes<xpu>::template Images<T>(attrs, ctx, g, rois);
    if (kForward)
      Kernel<RoiAlignForwardElem, xpu>::Launch(ctx.run_ctx, out[0].Size(), g, s, in[0].dptr<T>(),
                                               rois.dptr<T>(), img, out[0].dptr<T>(), req[0]);
    else
      Kernel<RoiAlignBackwardPlane, xpu>::Launch(ctx.run_ctx, g.n * g.c, g, s, in[0].dptr<T>(),
                                                 rois.dptr<T>(), img, out[0].dptr<T>(), req[0]);
  });
  if (!kForward && req[1] != kNullOp && req[1] != kAddTo) ZeroBlob<xpu>(ctx.run_ctx, out[1]);
}

}  // namespace tessera::op
