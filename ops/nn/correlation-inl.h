// Correlation (MXNet's, FlowNet's correlation layer): parameters, geometry
// and element kernels, shared by the CPU (correlation.cc) and GPU
// (correlation.cu) registrations. For every position of the first image and
// every displacement within max_displacement, the mean over a kernel_size
// patch and the channels of data1 * data2 (or of |data1 - data2|), the data
// zero-padded by pad_size. The forward is a thread per output element; the
// backward a thread per input element, gathering the outputs that compared
// it, so no atomics.
#pragma once

#include <cmath>
#include <vector>

#include "engine/op/float_dispatch.h"
#include "engine/op/kernel_launch.h"
#include "ops/nn/nn_common.h"

namespace tessera::op {

struct CorrelationParam : Params<CorrelationParam> {
  int kernel_size = 1, max_displacement = 1, stride1 = 1, stride2 = 1, pad_size = 0;
  bool is_multiply = true;
  static void Declare(ParamDecl<CorrelationParam>& d) {
    d.field("kernel_size", &CorrelationParam::kernel_size)
        .set_default(1)
        .set_lower_bound(1)
        .describe("The patch compared (an odd size).");
    d.field("max_displacement", &CorrelationParam::max_displacement)
        .set_default(1)
        .set_lower_bound(0)
        .describe("The largest displacement compared, in pixels.");
    d.field("stride1", &CorrelationParam::stride1)
        .set_default(1)
        .set_lower_bound(1)
        .describe("The step between positions of the first image.");
    d.field("stride2", &CorrelationParam::stride2)
        .set_default(1)
        .set_lower_bound(1)
        .describe("The step between displacements.");
    d.field("pad_size", &CorrelationParam::pad_size)
        .set_default(0)
        .set_lower_bound(0)
        .describe("Zeros added around both images.");
    d.field("is_multiply", &CorrelationParam::is_multiply)
        .set_default(true)
        .describe("Multiply the two images (else take the absolute difference).");
  }
};

struct CorrGeom {
  int64_t n, c, h, w, radius, grid, top_c, top_h, top_w;
  // The parameters the kernels read, by value.
  int64_t kernel, max_disp, stride1, stride2, pad;
  bool multiply;
};

inline CorrGeom CorrGeomOf(const NodeAttrs& attrs, const Shape& s) {
  const auto& p = ParamsOf<CorrelationParam>(attrs);
  TS_CHECK(s.ndim() == 4) << OpLabel(attrs) << ": data1 has shape " << s << "; it must be NCHW";
  const int64_t kr = (p.kernel_size - 1) / 2, border = p.max_displacement + kr;
  const int64_t ph = s[2] + 2 * p.pad_size, pw = s[3] + 2 * p.pad_size;
  TS_CHECK(ph - 2 * border >= 1 && pw - 2 * border >= 1)
      << OpLabel(attrs) << ": data " << s << " padded by " << p.pad_size
      << " is too small for max_displacement " << p.max_displacement << " and kernel_size "
      << p.kernel_size;
  CorrGeom g{s[0],
             s[1],
             s[2],
             s[3],
             p.max_displacement / p.stride2,
             0,
             0,
             0,
             0,
             p.kernel_size,
             p.max_displacement,
             p.stride1,
             p.stride2,
             p.pad_size,
             p.is_multiply};
  g.grid = 2 * g.radius + 1;
  g.top_c = g.grid * g.grid;
  g.top_h = (ph - 2 * border + p.stride1 - 1) / p.stride1;
  g.top_w = (pw - 2 * border + p.stride1 - 1) / p.stride1;
  return g;
}

// The offset of padded position (y, x) of channel ch of image b, or -1 in
// the zero padding.
TS_XINLINE int64_t CorrAt(const CorrGeom& g, int64_t b, int64_t ch, int64_t y, int64_t x) {
  y -= g.pad;
  x -= g.pad;
  if (y < 0 || y >= g.h || x < 0 || x >= g.w) return -1;
  return ((b * g.c + ch) * g.h + y) * g.w + x;
}

// Displacement tc's step, in padded pixels, along y and x.
TS_XINLINE int64_t CorrDy(const CorrGeom& g, int64_t tc) {
  return (tc / g.grid - g.radius) * g.stride2;
}
TS_XINLINE int64_t CorrDx(const CorrGeom& g, int64_t tc) {
  return (tc % g.grid - g.radius) * g.stride2;
}

struct CorrForwardElem {
  template <typename T>
  TS_XINLINE static void Map(int64_t o, CorrGeom g, const T* d1, const T* d2, T* y, OpReqType req) {
    const int64_t j = o % g.top_w, i = o / g.top_w % g.top_h,
                  tc = o / (g.top_w * g.top_h) % g.top_c, b = o / (g.top_w * g.top_h * g.top_c);
    const int64_t x1 = j * g.stride1 + g.max_disp, y1 = i * g.stride1 + g.max_disp;
    const int64_t x2 = x1 + CorrDx(g, tc), y2 = y1 + CorrDy(g, tc);
    double acc = 0;
    for (int64_t hh = 0; hh < g.kernel; ++hh)
      for (int64_t ww = 0; ww < g.kernel; ++ww)
        for (int64_t ch = 0; ch < g.c; ++ch) {
          const int64_t a = CorrAt(g, b, ch, y1 + hh, x1 + ww),
                        c = CorrAt(g, b, ch, y2 + hh, x2 + ww);
          const double v1 = a < 0 ? 0 : double(d1[a]), v2 = c < 0 ? 0 : double(d2[c]);
          acc += g.multiply ? v1 * v2 : fabs(v1 - v2);
        }
    const double v = acc / double(g.kernel * g.kernel * g.c);
    y[o] = req == kAddTo ? T(double(y[o]) + v) : T(v);
  }
};

// Input element e of data1 (kSecond false) or data2: the outputs whose
// patches compared it, each (displacement, patch offset) at most once.
template <bool kSecond>
struct CorrBackwardElem {
  template <typename T>
  TS_XINLINE static void Map(int64_t e, CorrGeom g, const T* go, const T* d1, const T* d2, T* dx,
                             OpReqType req) {
    const int64_t x = e % g.w + g.pad, y = e / g.w % g.h + g.pad, ch = e / (g.w * g.h) % g.c,
                  b = e / (g.w * g.h * g.c);
    const double mine = double(kSecond ? d2[e] : d1[e]);
    double acc = 0;
    for (int64_t tc = 0; tc < g.top_c; ++tc) {
      const int64_t dy = CorrDy(g, tc), dx_ = CorrDx(g, tc);
      for (int64_t hh = 0; hh < g.kernel; ++hh)
        for (int64_t ww = 0; ww < g.kernel; ++ww) {
          // The first image's patch corner this element sits at offset (hh, ww) of.
          const int64_t y1 = (kSecond ? y - dy : y) - hh - g.max_disp;
          const int64_t x1 = (kSecond ? x - dx_ : x) - ww - g.max_disp;
          if (y1 < 0 || x1 < 0 || y1 % g.stride1 != 0 || x1 % g.stride1 != 0) continue;
          const int64_t i = y1 / g.stride1, j = x1 / g.stride1;
          if (i >= g.top_h || j >= g.top_w) continue;
          const int64_t other =
              kSecond ? CorrAt(g, b, ch, y - dy, x - dx_) : CorrAt(g, b, ch, y + dy, x + dx_);
          const double v = other < 0 ? 0 : double(kSecond ? d1[other] : d2[other]);
          const double s = double(go[((b * g.top_c + tc) * g.top_h + i) * g.top_w + j]);
          // d(v1 v2) / d mine = the other; d|v1 - v2| / d v1 = sign(v1 - v2), the
          // CPU's convention at 0 (v1 >= v2 counts as positive for v1).
          const double v1 = kSecond ? v : mine, v2 = kSecond ? mine : v;
          const double d = g.multiply ? v : (v1 >= v2 ? 1.0 : -1.0) * (kSecond ? -1.0 : 1.0);
          acc += s * d;
        }
    }
    const double r = acc / double(g.kernel * g.kernel * g.c);
    dx[e] = req == kAddTo ? T(double(dx[e]) + r) : T(r);
  }
};

template <typename xpu>
void CorrelationForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const CorrGeom g = CorrGeomOf(attrs, in[0].shape());
  ForFloatAndDouble(attrs, in[0].dtype(), "Correlation", [&](auto zero) {
    using T = decltype(zero);
    Kernel<CorrForwardElem, xpu>::Launch(ctx.run_ctx, out[0].Size(), g, in[0].dptr<T>(),
                                         in[1].dptr<T>(), out[0].dptr<T>(), req[0]);
  });
}

// in: dOut, data1, data2; out: d data1, d data2.
template <typename xpu>
void CorrelationBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                         const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const CorrGeom g = CorrGeomOf(attrs, in[1].shape());
  ForFloatAndDouble(attrs, in[0].dtype(), "_backward_Correlation", [&](auto zero) {
    using T = decltype(zero);
    const T *go = in[0].dptr<T>(), *d1 = in[1].dptr<T>(), *d2 = in[2].dptr<T>();
    if (req[0] != kNullOp)
      Kernel<CorrBackwardElem<false>, xpu>::Launch(ctx.run_ctx, in[1].Size(), g, go, d1, d2,
                                                   out[0].dptr<T>(), req[0]);
    if (req[1] != kNullOp)
      Kernel<CorrBackwardElem<true>, xpu>::Launch(ctx.run_ctx, in[2].Size(), g, go, d1, d2,
                                                  out[1].dptr<T>(), req[1]);
  });
}

}  // namespace tessera::op
