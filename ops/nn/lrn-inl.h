// LRN's parameters and element kernels, shared by the CPU (lrn.cc) and GPU
// (lrn.cu) registrations. With s_c = knorm + alpha / nsize * (sum of x_d^2
// over the window of c) and a_c = g_c x_c s_c^(-beta-1):
//   out_c = x_c s_c^-beta,
//   dx_c = g_c s_c^-beta - 2 alpha beta / nsize * x_c * (sum of a_d over the
//          window of c)   (the window is symmetric: d is in c's iff c is in d's).
// An element kernel computes each s it needs itself (nsize^2 terms per
// element in the backward), so neither direction needs temp space.
#pragma once

#include <algorithm>
#include <vector>

#include "engine/op/kernel_launch.h"
#include "engine/op/params.h"
#include "ops/nn/nn_common.h"
#include "ops/tensor/elemwise_math.h"

namespace tessera::op {

struct LRNParam : Params<LRNParam> {
  float alpha = 1e-4f, beta = 0.75f, knorm = 2.f;
  int nsize = 0;
  static void Declare(ParamDecl<LRNParam>& d) {
    d.field("alpha", &LRNParam::alpha).set_default(1e-4f).describe("The scale of the sum.");
    d.field("beta", &LRNParam::beta).set_default(0.75f).describe("The exponent.");
    d.field("knorm", &LRNParam::knorm).set_default(2.f).describe("The offset k.");
    d.field("nsize", &LRNParam::nsize)
        .set_lower_bound(1)
        .describe("Channels in the window (odd: centred on each channel).");
  }
};

// The sizes and constants of one LRN, by value for the kernels.
struct LRNGeom {
  int64_t channels = 0, inner = 1;
  int half = 0;  // nsize / 2: the window of c is [c - half, c + half] within range
  double knorm = 2, coef = 0, beta = 0.75;  // coef = alpha / nsize
};

inline LRNGeom MakeLRNGeom(const LRNParam& p, const Shape& s) {
  return {s[1],
          s.ProdRange(2, s.ndim()),
          p.nsize / 2,
          double(p.knorm),
          double(p.alpha) / p.nsize,
          double(p.beta)};
}

// s at element (n, c, q), q the position within the channel's plane.
template <typename A, typename T>
TS_XINLINE A LRNScale(const LRNGeom& g, const T* x, int64_t n, int64_t c, int64_t q) {
  const int64_t d0 = c - g.half < 0 ? 0 : c - g.half;
  const int64_t d1 = c + g.half > g.channels - 1 ? g.channels - 1 : c + g.half;
  A sum = 0;
  for (int64_t d = d0; d <= d1; ++d) {
    const A v = static_cast<A>(x[(n * g.channels + d) * g.inner + q]);
    sum += v * v;
  }
  return static_cast<A>(g.knorm) + static_cast<A>(g.coef) * sum;
}

struct LRNForwardElem {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* y, const T* x, LRNGeom g, OpReqType req) {
    using A = AccType<T>;
    const int64_t q = i % g.inner, c = i / g.inner % g.channels, n = i / (g.inner * g.channels);
    const A v =
        static_cast<A>(x[i]) * math::pow(LRNScale<A>(g, x, n, c, q), -static_cast<A>(g.beta));
    y[i] = static_cast<T>(req == kAddTo ? static_cast<A>(y[i]) + v : v);
  }
};

struct LRNBackwardElem {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* dx, const T* dy, const T* x, LRNGeom g, OpReqType req) {
    using A = AccType<T>;
    const A beta = static_cast<A>(g.beta);
    const int64_t q = i % g.inner, c = i / g.inner % g.channels, n = i / (g.inner * g.channels);
    const int64_t d0 = c - g.half < 0 ? 0 : c - g.half;
    const int64_t d1 = c + g.half > g.channels - 1 ? g.channels - 1 : c + g.half;
    A sum = 0;  // a_d over the window
    for (int64_t d = d0; d <= d1; ++d) {
      const int64_t at = (n * g.channels + d) * g.inner + q;
      const A s = LRNScale<A>(g, x, n, d, q);
      sum += static_cast<A>(dy[at]) * static_cast<A>(x[at]) * math::pow(s, -beta) / s;
    }
    const A s = LRNScale<A>(g, x, n, c, q);
    const A v = static_cast<A>(dy[i]) * math::pow(s, -beta) -
                2 * static_cast<A>(g.coef) * beta * static_cast<A>(x[i]) * sum;
    dx[i] = static_cast<T>(req == kAddTo ? static_cast<A>(dx[i]) + v : v);
  }
};

// The element kernels over every element (the GPU's computation; the CPU
// has faster ones of its own).
template <typename xpu>
void LRNForwardElems(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const LRNGeom g = MakeLRNGeom(ParamsOf<LRNParam>(attrs), in[0].shape());
  SwitchFloatDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        Kernel<LRNForwardElem, xpu>::Launch(ctx.run_ctx, in[0].Size(), out[0].dptr<T>(),
                                            in[0].dptr<T>(), g, req[0]);
      },
      "LRN");
}

// (out_grad, data) -> data_grad.
template <typename xpu>
void LRNBackwardElems(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const LRNGeom g = MakeLRNGeom(ParamsOf<LRNParam>(attrs), in[1].shape());
  SwitchFloatDType(
      in[1].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        Kernel<LRNBackwardElem, xpu>::Launch(ctx.run_ctx, in[1].Size(), out[0].dptr<T>(),
                                             in[0].dptr<T>(), in[1].dptr<T>(), g, req[0]);
      },
      "_backward_LRN");
}

}  // namespace tessera::op
