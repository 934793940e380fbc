// Pad's parameters and element kernels, shared by the CPU (pad.cc) and GPU
// (pad.cu) registrations. The forward takes each output element from its
// source (PadSource); the backward gives each input element the sum of the
// output gradients whose source it is, gathered per input element (the
// output positions that map to it, axis by axis), so no two threads write
// one element and no atomics are needed.
#pragma once

#include <vector>

#include "engine/op/kernel_launch.h"
#include "engine/op/params.h"
#include "ops/nn/nn_common.h"

namespace tessera::op {

enum PadMode { kConstant, kEdge, kReflect };

struct PadParam : Params<PadParam> {
  int mode = kConstant;
  std::vector<int64_t> pad_width;
  double constant_value = 0;
  static void Declare(ParamDecl<PadParam>& d) {
    d.field("mode", &PadParam::mode)
        .set_default(kConstant)
        .add_enum("constant", kConstant)
        .add_enum("edge", kEdge)
        .add_enum("reflect", kReflect)
        .describe(
            "'constant' fills with constant_value, 'edge' repeats the border, "
            "'reflect' mirrors the array at its border (without repeating it).");
    d.field("pad_width", &PadParam::pad_width)
        .describe("(before_1, after_1, ..., before_n, after_n): the padding of each axis.");
    d.field("constant_value", &PadParam::constant_value)
        .set_default(0.0)
        .describe("The value of constant padding.");
  }
};

// The shapes and the padding, by value for the kernels.
struct PadGeom {
  int ndim = 0, mode = kConstant;
  int64_t in[Shape::kMaxNdim] = {}, out[Shape::kMaxNdim] = {}, before[Shape::kMaxNdim] = {};
};

inline PadGeom MakePadGeom(const PadParam& p, const Shape& in, const Shape& out) {
  PadGeom g;
  g.ndim = in.ndim();
  g.mode = p.mode;
  for (int d = 0; d < g.ndim; ++d) {
    g.in[d] = in[d];
    g.out[d] = out[d];
    g.before[d] = p.pad_width[2 * d];
  }
  return g;
}

// The input index output element `i` comes from, or -1 (constant padding).
TS_XINLINE int64_t PadSource(const PadGeom& g, int64_t i) {
  int64_t src = 0, stride = 1;
  for (int d = g.ndim - 1; d >= 0; --d) stride *= g.out[d];
  for (int d = 0; d < g.ndim; ++d) {
    stride /= g.out[d];
    int64_t c = (i / stride) % g.out[d] - g.before[d];
    const int64_t n = g.in[d];
    if (c < 0 || c >= n) {
      if (g.mode == kConstant) return -1;
      if (g.mode == kEdge)
        c = c < 0 ? 0 : n - 1;
      else
        c = c < 0 ? -c : 2 * (n - 1) - c;
    }
    src = src * n + c;
  }
  return src;
}

struct PadForwardKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* y, const T* x, PadGeom g, T fill, OpReqType req) {
    const int64_t s = PadSource(g, i);
    const T v = s < 0 ? fill : x[s];
    y[i] = req == kAddTo
               ? static_cast<T>(static_cast<AccType<T>>(y[i]) + static_cast<AccType<T>>(v))
               : v;
  }
};

// The output positions along axis d whose source is input coordinate c: up
// to three runs (the element itself; for edge, the padding beside a border
// element; for reflect, its mirror images).
struct PadRuns {
  int64_t start[3], len[3];
  int count = 0;
  TS_XINLINE void Add(int64_t s, int64_t l) {
    if (l > 0) {
      start[count] = s;
      len[count] = l;
      ++count;
    }
  }
  TS_XINLINE int64_t Total() const {
    int64_t t = 0;
    for (int r = 0; r < count; ++r) t += len[r];
    return t;
  }
  TS_XINLINE int64_t At(int64_t k) const {  // the k-th position over the runs
    for (int r = 0; r < count; ++r) {
      if (k < len[r]) return start[r] + k;
      k -= len[r];
    }
    return -1;
  }
};

TS_XINLINE PadRuns RunsOf(const PadGeom& g, int d, int64_t c) {
  const int64_t n = g.in[d], b = g.before[d], a = g.out[d] - n - b;
  PadRuns r;
  r.Add(c + b, 1);
  if (g.mode == kEdge) {
    if (c == 0) r.Add(0, b);
    if (c == n - 1) r.Add(n + b, a);
  } else if (g.mode == kReflect) {
    if (c >= 1 && c <= b) r.Add(b - c, 1);
    if (c <= n - 2 && c > n - 2 - a) r.Add(2 * (n - 1) - c + b, 1);
  }
  return r;
}

struct PadBackwardKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t j, T* dx, const T* dy, PadGeom g, OpReqType req) {
    using A = AccType<T>;
    PadRuns runs[Shape::kMaxNdim];
    int64_t total[Shape::kMaxNdim], k[Shape::kMaxNdim];
    int64_t rest = j;
    for (int d = g.ndim - 1; d >= 0; --d) {
      runs[d] = RunsOf(g, d, rest % g.in[d]);
      rest /= g.in[d];
      total[d] = runs[d].Total();
      k[d] = 0;
    }
    A sum = 0;
    for (;;) {  // every combination of one position per axis, odometer order
      int64_t at = 0;
      for (int d = 0; d < g.ndim; ++d) at = at * g.out[d] + runs[d].At(k[d]);
      sum += static_cast<A>(dy[at]);
      int d = g.ndim - 1;
      while (d >= 0 && ++k[d] == total[d]) k[d--] = 0;
      if (d < 0) break;
    }
    dx[j] = static_cast<T>(req == kAddTo ? static_cast<A>(dx[j]) + sum : sum);
  }
};

template <typename xpu>
void PadForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<PadParam>(attrs);
  const PadGeom g = MakePadGeom(p, in[0].shape(), out[0].shape());
  SwitchDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        Kernel<PadForwardKernel, xpu>::Launch(ctx.run_ctx, out[0].Size(), out[0].dptr<T>(),
                                              in[0].dptr<T>(), g, static_cast<T>(p.constant_value),
                                              req[0]);
      },
      "Pad");
}

// (out_grad) -> data_grad; params as the forward's, the input shape from
// the gradient's shape minus the padding.
template <typename xpu>
void PadBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const PadGeom g = MakePadGeom(ParamsOf<PadParam>(attrs), out[0].shape(), in[0].shape());
  SwitchFloatDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        Kernel<PadBackwardKernel, xpu>::Launch(ctx.run_ctx, out[0].Size(), out[0].dptr<T>(),
                                               in[0].dptr<T>(), g, req[0]);
      },
      "_backward_Pad");
}

}  // namespace tessera::op
