// contrib.BilinearResize2D's parameters and element kernels, shared by the
// CPU (bilinear_resize.cc) and GPU (bilinear_resize.cu) registrations. The
// forward is a thread per output element; the backward (the adjoint) a
// thread per (image, channel) plane, spreading its output gradient in order,
// so no atomics.
#pragma once

#include <cmath>
#include <optional>
#include <vector>

#include "engine/op/float_dispatch.h"
#include "engine/op/kernel_launch.h"
#include "ops/nn/nn_common.h"
#include "ops/nn/plane_resample-inl.h"
#include "ops/tensor/shape_strided-inl.h"

namespace tessera::op {

enum ResizeMode { kSize, kOddScale, kLike, kToEvenDown, kToEvenUp, kToOddDown, kToOddUp };

struct BilinearResizeParam : Params<BilinearResizeParam> {
  int height = 1, width = 1;
  std::optional<double> scale_height, scale_width;
  int mode = kSize;
  bool align_corners = true;
  static void Declare(ParamDecl<BilinearResizeParam>& d) {
    d.field("height", &BilinearResizeParam::height)
        .set_default(1)
        .set_lower_bound(1)
        .describe("Output height (mode 'size' without scale_height).");
    d.field("width", &BilinearResizeParam::width)
        .set_default(1)
        .set_lower_bound(1)
        .describe("Output width (mode 'size' without scale_width).");
    d.field("scale_height", &BilinearResizeParam::scale_height)
        .set_default(std::nullopt)
        .describe("Scale of the height (modes 'size' and 'odd_scale').");
    d.field("scale_width", &BilinearResizeParam::scale_width)
        .set_default(std::nullopt)
        .describe("Scale of the width (modes 'size' and 'odd_scale').");
    d.field("mode", &BilinearResizeParam::mode)
        .add_enum("size", kSize)
        .add_enum("odd_scale", kOddScale)
        .add_enum("like", kLike)
        .add_enum("to_even_down", kToEvenDown)
        .add_enum("to_even_up", kToEvenUp)
        .add_enum("to_odd_down", kToOddDown)
        .add_enum("to_odd_up", kToOddUp)
        .set_default(kSize)
        .describe(
            "size: height and width, or the input's times the scales; odd_scale: an odd size "
            "s gives (s - 1) * scale + 1, an even one s * scale; like: the second input's "
            "height and width; to_even_down / to_even_up / to_odd_down / to_odd_up: the "
            "nearest even (odd) size below (above) an odd (even) one.");
    d.field("align_corners", &BilinearResizeParam::align_corners)
        .set_default(true)
        .describe(
            "Source index dst * (in - 1) / (out - 1) (the corners' centres meet); else "
            "(dst + 0.5) * in / out - 0.5, at least 0.");
  }
};

// Where output index o of `out` samples along an axis of `in`: the lower
// source index, its step to the upper one (0 at the edge) and the upper
// one's weight.
struct ResizeTap {
  int64_t lo, step;
  double frac;
};

TS_XINLINE ResizeTap ResizeTapAt(int64_t o, int64_t in, int64_t out, bool align) {
  const double scale = out > 1 ? (align ? double(in - 1) / double(out - 1) : double(in) / out) : 0;
  double src = align ? scale * double(o) : scale * (double(o) + 0.5) - 0.5;
  if (src < 0) src = 0;
  const auto lo = int64_t(src);
  return {lo, lo < in - 1 ? 1 : 0, src - double(lo)};
}

// The sizes: planes of h x w resized to oh x ow.
struct ResizeGeom {
  int64_t h, w, oh, ow;
  bool align;
};

// fn(input offset in the plane, weight) for the four taps of output (i, j).
template <typename F>
TS_XINLINE void ForResizeTaps(const ResizeGeom& g, int64_t i, int64_t j, F&& fn) {
  const ResizeTap a = ResizeTapAt(i, g.h, g.oh, g.align), b = ResizeTapAt(j, g.w, g.ow, g.align);
  const int64_t base = a.lo * g.w + b.lo;
  fn(base, (1 - a.frac) * (1 - b.frac));
  fn(base + b.step, (1 - a.frac) * b.frac);
  fn(base + a.step * g.w, a.frac * (1 - b.frac));
  fn(base + a.step * g.w + b.step, a.frac * b.frac);
}

// Output (i, j) interpolates its four taps of the input plane; its
// gradient goes back to them with the same weights.
struct ResizeSampler {
  template <typename T>
  TS_XINLINE static double Sample(const ResizeGeom& g, const T* plane, int64_t i, int64_t j) {
    double v = 0;
    ForResizeTaps(g, i, j, [&](int64_t at, double wt) { v += wt * double(plane[at]); });
    return v;
  }
  template <typename T>
  TS_XINLINE static void Spread(const ResizeGeom& g, T* plane, int64_t i, int64_t j, double d) {
    ForResizeTaps(g, i, j,
                  [&](int64_t at, double wt) { plane[at] = T(double(plane[at]) + wt * d); });
  }
};

// kForward: x -> y; else dy -> dx (the adjoint, summed), and zeros for the
// gradient of `like`.
template <typename xpu, bool kForward>
void ResizeCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const Shape& small = kForward ? in[0].shape() : out[0].shape();  // the resized input
  const Shape& big = kForward ? out[0].shape() : in[0].shape();    // the output's shape
  const ResizeGeom g{small[2], small[3], big[2], big[3],
                     ParamsOf<BilinearResizeParam>(attrs).align_corners};
  const int64_t planes = small[0] * small[1];
  ForFloatAndDouble(attrs, in[0].dtype(), OpLabel(attrs).c_str(), [&](auto zero) {
    using T = decltype(zero);
    if (req[0] == kNullOp) return;
    if (kForward)
      Kernel<ResampleForwardKernel<ResizeSampler>, xpu>::Launch(
          ctx.run_ctx, planes * g.oh * g.ow, g, in[0].dptr<T>(), out[0].dptr<T>(), req[0]);
    else
      Kernel<ResampleBackwardPlane<ResizeSampler>, xpu>::Launch(
          ctx.run_ctx, planes, g, in[0].dptr<T>(), out[0].dptr<T>(), req[0]);
  });
  if (!kForward && out.size() == 2 && req[1] != kNullOp && req[1] != kAddTo)
    ZeroBlob<xpu>(ctx.run_ctx, out[1]);
}

}  // namespace tessera::op
