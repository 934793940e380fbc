// contrib.AdaptiveAvgPooling2D's parameters and element kernels, shared by
// the CPU (adaptive_avg_pooling.cc) and GPU (adaptive_avg_pooling.cu)
// registrations: bin (i, j) covers rows floor(i H / oh) to ceil((i + 1) H /
// oh) and the columns likewise. The forward is a thread per output element;
// the backward a thread per (image, channel) plane, spreading its bins in
// order (bins overlap where the sizes do not divide), so no atomics.
#pragma once

#include <cmath>
#include <utility>
#include <vector>

#include "engine/op/float_dispatch.h"
#include "engine/op/kernel_launch.h"
#include "ops/nn/nn_common.h"
#include "ops/nn/plane_resample-inl.h"

namespace tessera::op {

struct AdaptivePoolParam : Params<AdaptivePoolParam> {
  Shape output_size;
  static void Declare(ParamDecl<AdaptivePoolParam>& d) {
    d.field("output_size", &AdaptivePoolParam::output_size)
        .set_default(Shape())
        .describe("The output's (height, width), or one size for both; empty: (1, 1).");
  }
};

// The output's (oh, ow).
inline std::pair<int64_t, int64_t> AdaptiveOutputSize(const NodeAttrs& attrs) {
  const Shape& s = ParamsOf<AdaptivePoolParam>(attrs).output_size;
  TS_CHECK(s.ndim() <= 2) << OpLabel(attrs) << ": output_size " << s << " must have 1 or 2 values";
  for (int i = 0; i < s.ndim(); ++i)
    TS_CHECK(s[i] >= 1) << OpLabel(attrs) << ": output_size " << s << " must be positive";
  if (s.ndim() == 0) return {1, 1};
  return s.ndim() == 1 ? std::make_pair(s[0], s[0]) : std::make_pair(s[0], s[1]);
}

// Rows [Start(i), End(i)) of bin i of n over size s.
TS_XINLINE int64_t BinStart(int64_t i, int64_t n, int64_t s) {
  return int64_t(floor(double(i * s) / double(n)));
}
TS_XINLINE int64_t BinEnd(int64_t i, int64_t n, int64_t s) {
  return int64_t(ceil(double((i + 1) * s) / double(n)));
}

// The sizes: input planes of h x w, output planes of oh x ow.
struct AdaptiveGeom {
  int64_t h, w, oh, ow;
};

// Output (i, j) averages its bin of the input plane; its gradient spreads
// evenly over the bin.
struct AdaptiveSampler {
  // Bin (i, j): rows [h0, h1), columns [w0, w1).
  struct Bin {
    int64_t h0, h1, w0, w1;
    TS_XINLINE double Area() const { return double((h1 - h0) * (w1 - w0)); }
  };
  TS_XINLINE static Bin BinAt(const AdaptiveGeom& g, int64_t i, int64_t j) {
    return {BinStart(i, g.oh, g.h), BinEnd(i, g.oh, g.h), BinStart(j, g.ow, g.w),
            BinEnd(j, g.ow, g.w)};
  }
  template <typename T>
  TS_XINLINE static double Sample(const AdaptiveGeom& g, const T* plane, int64_t i, int64_t j) {
    const Bin b = BinAt(g, i, j);
    double s = 0;
    for (int64_t h = b.h0; h < b.h1; ++h)
      for (int64_t w = b.w0; w < b.w1; ++w) s += double(plane[h * g.w + w]);
    return s / b.Area();
  }
  template <typename T>
  TS_XINLINE static void Spread(const AdaptiveGeom& g, T* plane, int64_t i, int64_t j, double d) {
    const Bin b = BinAt(g, i, j);
    const T v = T(d / b.Area());
    for (int64_t h = b.h0; h < b.h1; ++h)
      for (int64_t w = b.w0; w < b.w1; ++w) plane[h * g.w + w] += v;
  }
};

// kForward: x (N, C, H, W) -> y (N, C, oh, ow) averages; else dy -> dx,
// each bin's gradient spread evenly over it.
template <typename xpu, bool kForward>
void AdaptiveCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const Shape& big = kForward ? in[0].shape() : out[0].shape();
  const auto [oh, ow] = AdaptiveOutputSize(attrs);
  const AdaptiveGeom g{big[2], big[3], oh, ow};
  const int64_t planes = big[0] * big[1];
  ForFloatAndDouble(attrs, in[0].dtype(), OpLabel(attrs).c_str(), [&](auto zero) {
    using T = decltype(zero);
    if (kForward)
      Kernel<ResampleForwardKernel<AdaptiveSampler>, xpu>::Launch(
          ctx.run_ctx, planes * oh * ow, g, in[0].dptr<T>(), out[0].dptr<T>(), req[0]);
    else
      Kernel<ResampleBackwardPlane<AdaptiveSampler>, xpu>::Launch(
          ctx.run_ctx, planes, g, in[0].dptr<T>(), out[0].dptr<T>(), req[0]);
  });
}

}  // namespace tessera::op
