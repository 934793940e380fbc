// _sample_multinomial (MXNet's sample_multinomial): parameters and element
// kernels, shared by the CPU (multinomial_op.cc) and GPU (multinomial_op.cu)
// registrations. Draw i takes the first uniform of its own sub-sequence of
// the op's stream (random_samplers.h's rule), so the CPU and the GPU draw the
// same classes for one seed. Probabilities and, in the backward, the samples
// are checked on the host (on the GPU after a copy: the op waits for its
// stream once); the backward is a thread per row taking its draws in order.
#pragma once

#include <cmath>
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/op.h"
#include "engine/op/params.h"
#include "engine/resource/random_stream.h"
#include "ops/tensor/host_values.h"

namespace tessera::op {

struct MultinomialParam : Params<MultinomialParam> {
  Shape shape;
  bool get_prob = false;
  DType dtype = DType::kInt32;
  static void Declare(ParamDecl<MultinomialParam>& d) {
    d.field("shape", &MultinomialParam::shape)
        .set_default(Shape())
        .describe(
            "The draws per row of probabilities; the output is data's shape without "
            "its last axis, followed by this one.");
    d.field("get_prob", &MultinomialParam::get_prob)
        .set_default(false)
        .describe(
            "Also return the log-probability of each draw (its gradient flows to "
            "data, for REINFORCE-style estimators).");
    d.field("dtype", &MultinomialParam::dtype)
        .set_default(DType::kInt32)
        .describe("The dtype of the drawn indices: int32, int64, float32 or float64.");
  }
};

// The class of uniform u in a row of probabilities: the first whose running
// sum passes u (the last class when rounding leaves the sum short of u).
template <typename P>
TS_XINLINE int64_t ClassOf(const P* row, int64_t k, double u) {
  double acc = 0;
  for (int64_t j = 0; j < k; ++j) {
    acc += double(row[j]);
    if (u < acc) return j;
  }
  return k - 1;
}

// Draw i: its class, and its log-probability where asked.
struct MultinomialDraw {
  template <typename P, typename T>
  TS_XINLINE static void Map(int64_t i, resource::RandomStream s, const P* prob, int64_t k,
                             int64_t per_row, T* y, OpReqType ry, P* lp, OpReqType rl) {
    const resource::PhiloxCounter c = resource::RandomBlock(s, uint64_t(i) << 20);
    const P* row = prob + (i / per_row) * k;
    const int64_t cls = ClassOf(row, k, resource::UnitDouble(c.v[0], c.v[1]));
    if (ry != kNullOp) y[i] = ry == kAddTo ? T(y[i] + T(cls)) : T(cls);
    if (lp && rl != kNullOp) {
      const double v = log(double(row[cls]));
      lp[i] = rl == kAddTo ? P(double(lp[i]) + v) : P(v);
    }
  }
};

// Row r of d data: sum over the row's draws of class c of dlogp / p[r, c].
struct MultinomialGradRow {
  template <typename P, typename T>
  TS_XINLINE static void Map(int64_t r, const P* g, const P* prob, const T* cls, int64_t k,
                             int64_t per_row, P* dx, OpReqType req) {
    P* row = dx + r * k;
    if (req != kAddTo)
      for (int64_t c = 0; c < k; ++c) row[c] = P(0);
    for (int64_t i = r * per_row; i < (r + 1) * per_row; ++i) {
      const int64_t c = int64_t(double(cls[i]));
      row[c] = P(double(row[c]) + double(g[i]) / double(prob[r * k + c]));
    }
  }
};

template <typename xpu>
void MultinomialCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const Shape& ds = in[0].shape();
  const int64_t k = ds[ds.ndim() - 1], n = out[0].Size(), per_row = n / (in[0].Size() / k);
  const std::vector<double> prob = HostValues<xpu>(ctx.run_ctx, in[0]);
  for (size_t i = 0; i < prob.size(); ++i)
    TS_CHECK(prob[i] >= 0) << OpLabel(attrs) << ": probability " << prob[i] << " at row "
                           << int64_t(i) / k << ", class " << int64_t(i) % k << " is negative";
  const resource::RandomStream s = ctx.requested.at(0).get_random();
  SwitchFloatDType(in[0].dtype(), [&](auto ptag) {
    using P = typename decltype(ptag)::type;
    P* lp = out.size() == 2 ? out[1].dptr<P>() : nullptr;
    const OpReqType rl = out.size() == 2 ? req[1] : kNullOp;
    SwitchDType(out[0].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Kernel<MultinomialDraw, xpu>::Launch(ctx.run_ctx, n, s, in[0].dptr<P>(), k, per_row,
                                           out[0].dptr<T>(), req[0], lp, rl);
    });
  });
}

// in: d log-probabilities, data, samples; out: d data.
template <typename xpu>
void MultinomialBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                         const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const Shape& ds = in[1].shape();
  const int64_t k = ds[ds.ndim() - 1], n = in[2].Size(), rows = in[1].Size() / k,
                per_row = n / rows;
  const std::vector<double> cls = HostValues<xpu>(ctx.run_ctx, in[2]);
  for (size_t i = 0; i < cls.size(); ++i)
    TS_CHECK(cls[i] >= 0 && cls[i] < double(k) && cls[i] == double(int64_t(cls[i])))
        << OpLabel(attrs) << ": sample " << i << " is " << cls[i] << ", not a class in [0, " << k
        << ")";
  SwitchFloatDType(in[1].dtype(), [&](auto ptag) {
    using P = typename decltype(ptag)::type;
    SwitchDType(in[2].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Kernel<MultinomialGradRow, xpu>::Launch(ctx.run_ctx, rows, in[0].dptr<P>(), in[1].dptr<P>(),
                                              in[2].dptr<T>(), k, per_row, out[0].dptr<P>(),
                                              req[0]);
    });
  });
}

}  // namespace tessera::op
