// softmax, log_softmax and softmin along one axis, and their gradients.
// Numerically stable: the maximum of each slice is subtracted before exp.
// The data is seen as (outer, len, inner) around the axis.
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/node.h"
#include "engine/op/op.h"

namespace tessera::op {

struct SoftmaxParam : Params<SoftmaxParam> {
  int axis = -1;
  std::optional<double> temperature;
  std::optional<DType> dtype;
  std::optional<bool> use_length;
  static void Declare(ParamDecl<SoftmaxParam>& d) {
    d.field("axis", &SoftmaxParam::axis)
        .set_default(-1)
        .set_axis()
        .describe("The axis along which the softmax is computed (default: the last).");
    d.field("temperature", &SoftmaxParam::temperature)
        .set_default(std::nullopt)
        .describe("Divides the input by this before the softmax. None: 1.");
    d.field("dtype", &SoftmaxParam::dtype)
        .set_default(std::nullopt)
        .describe(
            "The dtype of the output (float16, float32 or float64), e.g. float32 results "
            "for float16 data. None: the input's dtype.");
    d.field("use_length", &SoftmaxParam::use_length)
        .set_default(false)
        .describe("Masking by a length input (MXNet's use_length); only False is supported.");
  }
};

// Where the softmax axis splits the shape.
struct SoftmaxGeom {
  int64_t outer = 1, len = 1, inner = 1;
};
inline SoftmaxGeom MakeSoftmaxGeom(const Shape& s, int axis, const char* op) {
  const int ax = NormalizeAxis(axis, s.ndim(), op);
  return {s.ProdRange(0, ax), s[ax], s.ProdRange(ax + 1, s.ndim())};
}

// exp for the accumulator types, on host and device.
TS_XINLINE float SoftmaxExp(float x) {
  return ::expf(x);
}
TS_XINLINE double SoftmaxExp(double x) {
  return ::exp(x);
}
TS_XINLINE float SoftmaxLog(float x) {
  return ::logf(x);
}
TS_XINLINE double SoftmaxLog(double x) {
  return ::log(x);
}

template <typename O, typename V>
TS_XINLINE void SoftmaxStore(O& out, V v, OpReqType req) {
  if (req == kAddTo)
    out = static_cast<O>(static_cast<AccType<O>>(out) + static_cast<AccType<O>>(v));
  else if (req != kNullOp)
    out = static_cast<O>(v);
}

// The three passes over one slice of `len` elements spaced `stride` apart:
// max of v = x * scale, sum of exp(v - max), then the output. Shared by the
// CPU loops and the GPU thread-per-slice kernel.
template <bool kLog, typename T, typename O>
TS_XINLINE void SoftmaxSlice(const T* x, O* y, int64_t len, int64_t stride, AccType<T> scale,
                             OpReqType req) {
  using A = AccType<T>;
  A mx = static_cast<A>(x[0]) * scale;
  for (int64_t k = 1; k < len; ++k) {
    const A v = static_cast<A>(x[k * stride]) * scale;
    mx = (v > mx || v != v) ? v : mx;  // NaN propagates to the whole slice
  }
  A sum = A(0);
  for (int64_t k = 0; k < len; ++k) sum += SoftmaxExp(static_cast<A>(x[k * stride]) * scale - mx);
  if constexpr (kLog) {
    const A shift = mx + SoftmaxLog(sum);
    for (int64_t k = 0; k < len; ++k)
      SoftmaxStore(y[k * stride], static_cast<A>(x[k * stride]) * scale - shift, req);
  } else {
    const A inv = A(1) / sum;
    for (int64_t k = 0; k < len; ++k)
      SoftmaxStore(y[k * stride], SoftmaxExp(static_cast<A>(x[k * stride]) * scale - mx) * inv,
                   req);
  }
}

// The gradient along one slice, from the output y and its gradient g:
//   softmax:     gx = scale * y * (g - sum(g * y))
//   log_softmax: gx = scale * (g - exp(y) * sum(g))
template <bool kLog, typename G, typename T>
TS_XINLINE void SoftmaxGradSlice(const G* g, const G* y, T* gx, int64_t len, int64_t stride,
                                 AccType<G> scale, OpReqType req) {
  using A = AccType<G>;
  A dot = A(0);
  for (int64_t k = 0; k < len; ++k) {
    const A gk = static_cast<A>(g[k * stride]);
    dot += kLog ? gk : gk * static_cast<A>(y[k * stride]);
  }
  for (int64_t k = 0; k < len; ++k) {
    const A gk = static_cast<A>(g[k * stride]), yk = static_cast<A>(y[k * stride]);
    const A v = kLog ? gk - SoftmaxExp(yk) * dot : yk * (gk - dot);
    SoftmaxStore(gx[k * stride], v * scale, req);
  }
}

// CPU: OpenMP over slices (static schedule, so a thread takes neighbouring
// slices: for a strided axis these share cache lines between passes).
// f(off) runs once per slice, off being the offset of its first element.
template <typename F>
void ForEachSoftmaxSliceCpu(const RunContext& rctx, const SoftmaxGeom& g, const F& f) {
  const int64_t slices = g.outer * g.inner;
  [[maybe_unused]] const int threads = CpuThreads(rctx, slices * g.len);
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#endif
  for (int64_t s = 0; s < slices; ++s) {
    const int64_t m = s / g.inner, n = s % g.inner;
    f(m * g.len * g.inner + n);
  }
}

template <bool kLog, typename T, typename O>
void SoftmaxForwardCpu(const RunContext& rctx, const SoftmaxGeom& g, const T* x, O* y, double scale,
                       OpReqType req) {
  using A = AccType<T>;
  ForEachSoftmaxSliceCpu(rctx, g, [&](int64_t off) {
    SoftmaxSlice<kLog>(x + off, y + off, g.len, g.inner, static_cast<A>(scale), req);
  });
}

template <bool kLog, typename G, typename T>
void SoftmaxBackwardCpu(const RunContext& rctx, const SoftmaxGeom& geom, const G* g, const G* y,
                        T* gx, double scale, OpReqType req) {
  using A = AccType<G>;
  ForEachSoftmaxSliceCpu(rctx, geom, [&](int64_t off) {
    SoftmaxGradSlice<kLog>(g + off, y + off, gx + off, geom.len, geom.inner, static_cast<A>(scale),
                           req);
  });
}

// oneDNN's softmax (softmax_dnnl.cc): float32, scale 1. False when oneDNN
// declines the call (the caller then runs the portable loop).
bool DnnlSoftmaxForward(const SoftmaxGeom& g, bool log, const float* x, float* y, int threads);
bool DnnlSoftmaxBackward(const SoftmaxGeom& g, bool log, const float* gy, const float* y, float* gx,
                         int threads);
// Below this many elements the portable loop, on one thread, is faster.
inline constexpr int64_t kDnnlSoftmaxMinElements = kOmpMinElements;

// Device dispatch (the GPU overloads are in softmax_gpu.cuh).
template <bool kLog, typename T, typename O>
void RunSoftmax(cpu, const OpContext& ctx, const SoftmaxGeom& g, const T* x, O* y, double scale,
                OpReqType req) {
  if constexpr (std::is_same_v<T, float> && std::is_same_v<O, float>) {
    if (scale == 1.0 && (req == kWriteTo || req == kWriteInplace) &&
        g.outer * g.len * g.inner >= kDnnlSoftmaxMinElements &&
        DnnlSoftmaxForward(g, kLog, x, y, ctx.run_ctx.omp_threads))
      return;
  }
  SoftmaxForwardCpu<kLog>(ctx.run_ctx, g, x, y, scale, req);
}
template <bool kLog, typename G, typename T>
void RunSoftmaxGrad(cpu, const OpContext& ctx, const SoftmaxGeom& geom, const G* g, const G* y,
                    T* gx, double scale, OpReqType req) {
  if constexpr (std::is_same_v<G, float> && std::is_same_v<T, float>) {
    // Not in place: oneDNN's backward reads the gradient it writes over.
    if (scale == 1.0 && req == kWriteTo && gx != g && gx != y &&
        geom.outer * geom.len * geom.inner >= kDnnlSoftmaxMinElements &&
        DnnlSoftmaxBackward(geom, kLog, g, y, gx, ctx.run_ctx.omp_threads))
      return;
  }
  SoftmaxBackwardCpu<kLog>(ctx.run_ctx, geom, g, y, gx, scale, req);
}

// The factor applied to the input: 1/temperature, negated for softmin.
inline double SoftmaxScale(const SoftmaxParam& p, bool negate) {
  const double t = p.temperature ? *p.temperature : 1.0;
  return (negate ? -1.0 : 1.0) / t;
}

template <typename xpu, bool kLog, bool kNegate>
void SoftmaxCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<SoftmaxParam>(attrs);
  const SoftmaxGeom geom = MakeSoftmaxGeom(in[0].shape(), p.axis, attrs.op->name().c_str());
  const double scale = SoftmaxScale(p, kNegate);
  SwitchFloatDType(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchFloatDType(out[0].dtype(), [&](auto otag) {
      using O = typename decltype(otag)::type;
      RunSoftmax<kLog>(xpu{}, ctx, geom, in[0].dptr<T>(), out[0].dptr<O>(), scale, req[0]);
    });
  });
}

// Inputs: ograd, out[, data (read for its dtype when the dtype parameter is set)].
template <typename xpu, bool kLog, bool kNegate>
void SoftmaxBackwardCompute(const NodeAttrs& attrs, const OpContext& ctx,
                            const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                            const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<SoftmaxParam>(attrs);
  const SoftmaxGeom geom = MakeSoftmaxGeom(in[1].shape(), p.axis, attrs.op->name().c_str());
  const double scale = SoftmaxScale(p, kNegate);
  SwitchFloatDType(in[0].dtype(), [&](auto gtag) {
    using G = typename decltype(gtag)::type;
    SwitchFloatDType(out[0].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      RunSoftmaxGrad<kLog>(xpu{}, ctx, geom, in[0].dptr<G>(), in[1].dptr<G>(), out[0].dptr<T>(),
                           scale, req[0]);
    });
  });
}

}  // namespace tessera::op
