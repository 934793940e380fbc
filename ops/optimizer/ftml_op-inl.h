// ftml_update (MXNet's): Follow the Moving Leader (Zheng and Kwok, 2017),
// MXNet's FTMLKernel element by element; shared by the CPU (ftml_op.cc) and
// GPU (ftml_op.cu) registrations.
#pragma once

#include <cmath>
#include <vector>

#include "ops/optimizer/optimizer_op-inl.h"

namespace tessera::op {

struct FTMLParam : Params<FTMLParam> {
  float lr = 0, beta1 = 0.6f, beta2 = 0.999f, epsilon = 1e-8f, wd = 0, rescale_grad = 1,
        clip_grad = -1;
  int t = 0;
  static void Declare(ParamDecl<FTMLParam>& d) {
    DeclareLr(d, &FTMLParam::lr);
    d.field("beta1", &FTMLParam::beta1).set_default(0.6f).describe("Generally close to 0.5.");
    d.field("beta2", &FTMLParam::beta2).set_default(0.999f).describe("Generally close to 1.");
    d.field("epsilon", &FTMLParam::epsilon)
        .set_default(1e-8f)
        .describe("Epsilon to prevent div 0.");
    d.field("t", &FTMLParam::t).set_lower_bound(1).describe("Number of update.");
    d.field("wd", &FTMLParam::wd).set_default(0.f).describe("Weight decay.");
    d.field("rescale_grad", &FTMLParam::rescale_grad)
        .set_default(1.f)
        .describe("Rescale gradient to grad = rescale_grad*grad.");
    d.field("clip_grad", &FTMLParam::clip_grad)
        .set_default(-1.f)
        .describe("Clip rescale_grad * grad to [-clip_grad, clip_grad]; off when < 0.");
  }
};

// The step's constants, by value for the kernel.
template <typename T>
struct FTMLHyper {
  T lr, b1, b2, eps, wd, rescale, clip, b1t, b2t;  // b1t = 1 - beta1^t, b2t likewise
};

struct FTMLKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* o, const T* w, const T* g, T* d, T* v, T* z,
                             FTMLHyper<T> h, OpReqType req) {
    const T wi = w[i];
    const T gi =
        (h.clip >= T(0) ? ClipBound(h.rescale * g[i], h.clip) : h.rescale * g[i]) + h.wd * wi;
    v[i] = h.b2 * v[i] + (T(1) - h.b2) * gi * gi;
    const T dt = h.b1t / h.lr * (std::sqrt(v[i] / h.b2t) + h.eps);
    z[i] = h.b1 * z[i] + (T(1) - h.b1) * gi - (dt - h.b1 * d[i]) * wi;
    d[i] = dt;
    if (req == kAddTo)
      o[i] += -z[i] / dt;
    else if (req != kNullOp)
      o[i] = -z[i] / dt;
  }
};

// in: weight, grad, d, v, z (the last three updated in place).
template <typename xpu>
void FTMLUpdate(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<FTMLParam>(attrs);
  SwitchOptimizerDType(in[0].dtype(), "ftml_update", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T b1 = T(p.beta1), b2 = T(p.beta2);
    const FTMLHyper<T> h{T(p.lr),
                         b1,
                         b2,
                         T(p.epsilon),
                         T(p.wd),
                         T(p.rescale_grad),
                         T(p.clip_grad),
                         T(1) - std::pow(b1, T(p.t)),
                         T(1) - std::pow(b2, T(p.t))};
    Kernel<FTMLKernel, xpu>::Launch(ctx.run_ctx, in[0].Size(), out[0].dptr<T>(), in[0].dptr<T>(),
                                    in[1].dptr<T>(), in[2].dptr<T>(), in[3].dptr<T>(),
                                    in[4].dptr<T>(), h, req[0]);
  });
}

}  // namespace tessera::op
