// Pooling over regions of interest (MXNet's): ROIPooling (max over each
// bin of a rounded box, Fast R-CNN) and contrib.ROIAlign (bilinear samples
// averaged over each bin, Mask R-CNN; position-sensitive and Detectron2's
// aligned variants). Boxes are rows [batch_index, x1, y1, x2, y2] in image
// coordinates, scaled to the feature map by spatial_scale; a negative batch
// index marks a padding box, whose output is zero.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/nn/nn_common.h"
#include "ops/nn/softmax_output-inl.h"

namespace tessera::op {
namespace {

template <typename P>
void DeclareRoiFields(ParamDecl<P>& d) {
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
RoiGeom GeomOf(const NodeAttrs& attrs, const Shape& data, const Shape& rois, bool four_ok,
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
// batch is an error (read before any thread starts).
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

// ---------------------------------------------------------------------------
// ROIPooling: outputs (out, max_idx); max_idx is the flat data index of each
// bin's maximum (-1 for an empty bin), the backward's route.

bool RoiPoolShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known() || !(*in)[1].known()) return false;
  const RoiGeom g = GeomOf<ROIPoolingParam>(attrs, (*in)[0], (*in)[1], false, false);
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

void RoiPoolForward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const RoiGeom g = GeomOf<ROIPoolingParam>(attrs, in[0].shape(), in[1].shape(), false, false);
  const float scale = ParamsOf<ROIPoolingParam>(attrs).spatial_scale;
  ForFloatAndDouble(attrs, in[0].dtype(), "ROIPooling", [&](auto zero) {
    using T = decltype(zero);
    const T* x = in[0].dptr<T>();
    const T* rois = in[1].dptr<T>();
    T* y = out[0].dptr<T>();
    int64_t* arg = out[1].dptr<int64_t>();
    const std::vector<int64_t> img = BoxImages(attrs, g, rois);
    for (int64_t i = 0; i < g.r; ++i) {
      const T* box = rois + i * g.cols;
      const int64_t x1 = std::llround(double(box[1]) * scale),
                    y1 = std::llround(double(box[2]) * scale);
      const int64_t x2 = std::llround(double(box[3]) * scale),
                    y2 = std::llround(double(box[4]) * scale);
      const double bh = double(std::max<int64_t>(y2 - y1 + 1, 1)) / double(g.ph);
      const double bw = double(std::max<int64_t>(x2 - x1 + 1, 1)) / double(g.pw);
      for (int64_t c = 0; c < g.c; ++c)
        for (int64_t a = 0; a < g.ph; ++a)
          for (int64_t b = 0; b < g.pw; ++b) {
            const int64_t h0 = std::clamp<int64_t>(int64_t(std::floor(a * bh)) + y1, 0, g.h);
            const int64_t h1 = std::clamp<int64_t>(int64_t(std::ceil((a + 1) * bh)) + y1, 0, g.h);
            const int64_t w0 = std::clamp<int64_t>(int64_t(std::floor(b * bw)) + x1, 0, g.w);
            const int64_t w1 = std::clamp<int64_t>(int64_t(std::ceil((b + 1) * bw)) + x1, 0, g.w);
            T best = std::numeric_limits<T>::lowest();
            int64_t where = -1;
            if (img[size_t(i)] >= 0 && h1 > h0 && w1 > w0) {
              const int64_t plane = (img[size_t(i)] * g.c + c) * g.h * g.w;
              for (int64_t hh = h0; hh < h1; ++hh)
                for (int64_t ww = w0; ww < w1; ++ww)
                  if (where < 0 || x[plane + hh * g.w + ww] > best) {
                    best = x[plane + hh * g.w + ww];
                    where = plane + hh * g.w + ww;
                  }
            }
            const int64_t o = ((i * g.c + c) * g.ph + a) * g.pw + b;
            const T v = where < 0 ? T(0) : best;
            if (req[0] == kAddTo)
              y[o] += v;
            else if (req[0] != kNullOp)
              y[o] = v;
            if (req[1] != kNullOp) arg[o] = where;
          }
    }
  });
}

// in: dOut, max_idx, data, rois; out: d data (routed to the maxima), d rois.
void RoiPoolBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  ForFloatAndDouble(attrs, in[0].dtype(), "_backward_ROIPooling", [&](auto zero) {
    using T = decltype(zero);
    const T* g = in[0].dptr<T>();
    const int64_t* arg = in[1].dptr<int64_t>();
    T* dx = out[0].dptr<T>();
    const int64_t n = out[0].Size();
    if (req[0] != kNullOp) {
      if (req[0] != kAddTo) std::fill(dx, dx + n, T(0));
      for (int64_t o = 0, m = in[0].Size(); o < m; ++o)
        if (arg[o] >= 0 && arg[o] < n) dx[arg[o]] += g[o];
    }
    FillZeroReq<T>(out[1], req[1]);
  });
}

// ---------------------------------------------------------------------------
// ROIAlign

bool RoiAlignShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known() || !(*in)[1].known()) return false;
  const auto& p = ParamsOf<ROIAlignParam>(attrs);
  const RoiGeom g = GeomOf<ROIAlignParam>(attrs, (*in)[0], (*in)[1], true, p.position_sensitive);
  AssignShape(attrs, out, 0, Shape{g.r, g.c_out, g.ph, g.pw}, "output");
  return true;
}

// Calls fn(plane offset, position, weight) for the 4 bilinear taps of every
// sample of bin (a, b) of box i, the weights divided by the sample count:
// MXNet's sampling (samples outside [-1, size] contribute nothing).
template <typename T, typename F>
void ForEachTap(const ROIAlignParam& p, const RoiGeom& g, const T* box, int64_t a, int64_t b,
                F&& fn) {
  const double off = p.aligned ? 0.5 : 0.0, s = p.spatial_scale;
  const double x1 = double(box[0]) * s - off, y1 = double(box[1]) * s - off;
  double rw = double(box[2]) * s - off - x1, rh = double(box[3]) * s - off - y1;
  if (!p.aligned) {
    rw = std::max(rw, 1.0);
    rh = std::max(rh, 1.0);
  }
  const double bh = rh / double(g.ph), bw = rw / double(g.pw);
  const int64_t gh = p.sample_ratio > 0 ? p.sample_ratio : int64_t(std::ceil(rh / double(g.ph)));
  const int64_t gw = p.sample_ratio > 0 ? p.sample_ratio : int64_t(std::ceil(rw / double(g.pw)));
  const double count = double(std::max<int64_t>(gh * gw, 1));
  for (int64_t iy = 0; iy < gh; ++iy)
    for (int64_t ix = 0; ix < gw; ++ix) {
      double y = y1 + double(a) * bh + (double(iy) + 0.5) * bh / double(gh);
      double x = x1 + double(b) * bw + (double(ix) + 0.5) * bw / double(gw);
      if (y < -1.0 || y > double(g.h) || x < -1.0 || x > double(g.w)) continue;
      y = std::max(y, 0.0);
      x = std::max(x, 0.0);
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

// kForward: out = the bins' averages; else in dOut -> d data (the adjoint).
template <bool kForward>
void RoiAlignCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<ROIAlignParam>(attrs);
  const TBlob& data = kForward ? in[0] : out[0];
  const TBlob& rois_blob = kForward ? in[1] : in[2];
  const RoiGeom g =
      GeomOf<ROIAlignParam>(attrs, data.shape(), rois_blob.shape(), true, p.position_sensitive);
  ForFloatAndDouble(attrs, data.dtype(), "ROIAlign", [&](auto zero) {
    using T = decltype(zero);
    const T* rois = rois_blob.dptr<T>();
    const std::vector<int64_t> img = BoxImages(attrs, g, rois);
    const T* src = in[0].dptr<T>();  // data, or dOut
    T* dst = out[0].dptr<T>();       // out, or d data
    const bool add = req[0] == kAddTo;
    if (!kForward && req[0] != kNullOp && !add) std::fill(dst, dst + out[0].Size(), T(0));
    if (req[0] != kNullOp)
      for (int64_t i = 0; i < g.r; ++i) {
        const T* box = rois + i * g.cols + (g.cols == 5 ? 1 : 0);
        for (int64_t c = 0; c < g.c_out; ++c)
          for (int64_t a = 0; a < g.ph; ++a)
            for (int64_t b = 0; b < g.pw; ++b) {
              const int64_t o = ((i * g.c_out + c) * g.ph + a) * g.pw + b;
              if (img[size_t(i)] < 0) {
                if (kForward) dst[o] = add ? dst[o] : T(0);
                continue;
              }
              const int64_t cin = p.position_sensitive ? (c * g.ph + a) * g.pw + b : c;
              const int64_t plane = (img[size_t(i)] * g.c + cin) * g.h * g.w;
              if (kForward) {
                double v = 0;
                ForEachTap(p, g, box, a, b,
                           [&](int64_t at, double w) { v += w * double(src[plane + at]); });
                dst[o] = T(add ? double(dst[o]) + v : v);
              } else {
                const double go = double(src[o]);
                ForEachTap(p, g, box, a, b, [&](int64_t at, double w) {
                  dst[plane + at] = T(double(dst[plane + at]) + w * go);
                });
              }
            }
      }
    if (!kForward) FillZeroReq<T>(out[1], req[1]);
  });
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
    .set_attr<FCompute>(kFComputeCPU, RoiPoolForward)
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
    .set_attr<FCompute>(kFComputeCPU, RoiPoolBackward);

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
    .set_attr<FCompute>(kFComputeCPU, RoiAlignCompute<true>)
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
    .set_attr<FCompute>(kFComputeCPU, RoiAlignCompute<false>);

}  // namespace tessera::op
