// Fused optimizer updates (MXNet's src/operator/optimizer_op-inl.h): each
// reads the weight and its gradient, updates its state inputs (momentum,
// mean/var, ...) in place (FMutateInputs) and writes the new weight to its
// output; `out=weight` makes the whole update in place (FInplaceOption
// {0, 0}). The formulas are MXNet's kernels, element by element.
#pragma once

#include <cmath>
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/op.h"

namespace tessera::op {

// Shared field declarations (MXNet's texts).
template <typename P>
void DeclareLr(ParamDecl<P>& d, float P::*lr) {
  d.field("lr", lr).describe("Learning rate");
}
template <typename P>
void DeclareCommon(ParamDecl<P>& d, float P::*wd, float P::*rescale, float P::*clip) {
  d.field("wd", wd).set_default(0.f).describe(
      "Weight decay augments the objective function with a regularization term that "
      "penalizes large weights. The penalty scales with the square of the magnitude of each "
      "weight.");
  d.field("rescale_grad", rescale)
      .set_default(1.f)
      .describe("Rescale gradient to grad = rescale_grad*grad.");
  d.field("clip_gradient", clip)
      .set_default(-1.f)
      .describe(
          "Clip gradient to the range of [-clip_gradient, clip_gradient] If clip_gradient <= 0, "
          "gradient clipping is turned off. grad = max(min(grad, clip_gradient), "
          "-clip_gradient).");
}
template <typename P>
void DeclareLazy(ParamDecl<P>& d, bool P::*lazy) {
  d.field("lazy_update", lazy)
      .set_default(true)
      .describe(
          "If true, lazy updates are applied if gradient's stype is row_sparse (accepted and "
          "ignored: Tessera's arrays are dense).");
}
template <typename P>
void DeclareClipWeights(ParamDecl<P>& d, float P::*clip_weights) {
  d.field("clip_weights", clip_weights)
      .set_default(-1.f)
      .describe(
          "Clip weights to the range of [-clip_weights, clip_weights] If clip_weights <= 0, "
          "weight clipping is turned off. weights = max(min(weights, clip_weights), "
          "-clip_weights).");
}

struct SGDParam : Params<SGDParam> {
  float lr = 0, wd = 0, rescale_grad = 1, clip_gradient = -1;
  bool lazy_update = true;
  static void Declare(ParamDecl<SGDParam>& d) {
    DeclareLr(d, &SGDParam::lr);
    DeclareCommon(d, &SGDParam::wd, &SGDParam::rescale_grad, &SGDParam::clip_gradient);
    DeclareLazy(d, &SGDParam::lazy_update);
  }
};

struct SGDMomParam : Params<SGDMomParam> {
  float lr = 0, momentum = 0, wd = 0, rescale_grad = 1, clip_gradient = -1;
  bool lazy_update = true;
  static void Declare(ParamDecl<SGDMomParam>& d) {
    DeclareLr(d, &SGDMomParam::lr);
    d.field("momentum", &SGDMomParam::momentum)
        .set_default(0.f)
        .describe("The decay rate of momentum estimates at each epoch.");
    DeclareCommon(d, &SGDMomParam::wd, &SGDMomParam::rescale_grad, &SGDMomParam::clip_gradient);
    DeclareLazy(d, &SGDMomParam::lazy_update);
  }
};

struct NAGMomParam : Params<NAGMomParam> {
  float lr = 0, momentum = 0, wd = 0, rescale_grad = 1, clip_gradient = -1;
  static void Declare(ParamDecl<NAGMomParam>& d) {
    DeclareLr(d, &NAGMomParam::lr);
    d.field("momentum", &NAGMomParam::momentum)
        .set_default(0.f)
        .describe("The decay rate of momentum estimates at each epoch.");
    DeclareCommon(d, &NAGMomParam::wd, &NAGMomParam::rescale_grad, &NAGMomParam::clip_gradient);
  }
};

struct AdamParam : Params<AdamParam> {
  float lr = 0, beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f, wd = 0, rescale_grad = 1,
        clip_gradient = -1;
  bool lazy_update = true;
  static void Declare(ParamDecl<AdamParam>& d) {
    DeclareLr(d, &AdamParam::lr);
    d.field("beta1", &AdamParam::beta1)
        .set_default(0.9f)
        .describe("The decay rate for the 1st moment estimates.");
    d.field("beta2", &AdamParam::beta2)
        .set_default(0.999f)
        .describe("The decay rate for the 2nd moment estimates.");
    d.field("epsilon", &AdamParam::epsilon)
        .set_default(1e-8f)
        .describe("A small constant for numerical stability.");
    DeclareCommon(d, &AdamParam::wd, &AdamParam::rescale_grad, &AdamParam::clip_gradient);
    DeclareLazy(d, &AdamParam::lazy_update);
  }
};

struct RMSPropParam : Params<RMSPropParam> {
  float lr = 0, gamma1 = 0.95f, epsilon = 1e-8f, wd = 0, rescale_grad = 1, clip_gradient = -1,
        clip_weights = -1;
  static void Declare(ParamDecl<RMSPropParam>& d) {
    DeclareLr(d, &RMSPropParam::lr);
    d.field("gamma1", &RMSPropParam::gamma1)
        .set_default(0.95f)
        .describe("The decay rate of momentum estimates.");
    d.field("epsilon", &RMSPropParam::epsilon)
        .set_default(1e-8f)
        .describe("A small constant for numerical stability.");
    DeclareCommon(d, &RMSPropParam::wd, &RMSPropParam::rescale_grad, &RMSPropParam::clip_gradient);
    DeclareClipWeights(d, &RMSPropParam::clip_weights);
  }
};

struct RMSPropAlexParam : Params<RMSPropAlexParam> {
  float lr = 0, gamma1 = 0.95f, gamma2 = 0.9f, epsilon = 1e-8f, wd = 0, rescale_grad = 1,
        clip_gradient = -1, clip_weights = -1;
  static void Declare(ParamDecl<RMSPropAlexParam>& d) {
    DeclareLr(d, &RMSPropAlexParam::lr);
    d.field("gamma1", &RMSPropAlexParam::gamma1).set_default(0.95f).describe("Decay rate.");
    d.field("gamma2", &RMSPropAlexParam::gamma2).set_default(0.9f).describe("Decay rate.");
    d.field("epsilon", &RMSPropAlexParam::epsilon)
        .set_default(1e-8f)
        .describe("A small constant for numerical stability.");
    DeclareCommon(d, &RMSPropAlexParam::wd, &RMSPropAlexParam::rescale_grad,
                  &RMSPropAlexParam::clip_gradient);
    DeclareClipWeights(d, &RMSPropAlexParam::clip_weights);
  }
};

struct SignSGDParam : Params<SignSGDParam> {
  float lr = 0, wd = 0, rescale_grad = 1, clip_gradient = -1;
  static void Declare(ParamDecl<SignSGDParam>& d) {
    DeclareLr(d, &SignSGDParam::lr);
    DeclareCommon(d, &SignSGDParam::wd, &SignSGDParam::rescale_grad, &SignSGDParam::clip_gradient);
  }
};

struct SignumParam : Params<SignumParam> {
  float lr = 0, momentum = 0, wd = 0, rescale_grad = 1, clip_gradient = -1, wd_lh = 0;
  static void Declare(ParamDecl<SignumParam>& d) {
    DeclareLr(d, &SignumParam::lr);
    d.field("momentum", &SignumParam::momentum)
        .set_default(0.f)
        .describe("The decay rate of momentum estimates at each epoch.");
    DeclareCommon(d, &SignumParam::wd, &SignumParam::rescale_grad, &SignumParam::clip_gradient);
    d.field("wd_lh", &SignumParam::wd_lh)
        .set_default(0.f)
        .describe(
            "The amount of weight decay that does not go into gradient/momentum calculations "
            "otherwise do weight decay algorithmically only.");
  }
};

struct FtrlParam : Params<FtrlParam> {
  float lr = 0, lamda1 = 0.01f, beta = 1, wd = 0, rescale_grad = 1, clip_gradient = -1;
  static void Declare(ParamDecl<FtrlParam>& d) {
    DeclareLr(d, &FtrlParam::lr);
    d.field("lamda1", &FtrlParam::lamda1)
        .set_default(0.01f)
        .describe("The L1 regularization coefficient.");
    d.field("beta", &FtrlParam::beta)
        .set_default(1.f)
        .describe("Per-Coordinate Learning Rate beta.");
    DeclareCommon(d, &FtrlParam::wd, &FtrlParam::rescale_grad, &FtrlParam::clip_gradient);
  }
};

struct AdamWParam : Params<AdamWParam> {
  float lr = 0, beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f, wd = 0, eta = 1, rescale_grad = 1,
        clip_gradient = -1;
  static void Declare(ParamDecl<AdamWParam>& d) {
    DeclareLr(d, &AdamWParam::lr);
    d.field("beta1", &AdamWParam::beta1)
        .set_default(0.9f)
        .describe("The decay rate for the 1st moment estimates.");
    d.field("beta2", &AdamWParam::beta2)
        .set_default(0.999f)
        .describe("The decay rate for the 2nd moment estimates.");
    d.field("epsilon", &AdamWParam::epsilon)
        .set_default(1e-8f)
        .describe("A small constant for numerical stability.");
    d.field("eta", &AdamWParam::eta)
        .set_default(1.f)
        .describe("Learning rate schedule multiplier: it scales both the Adam step and the decay.");
    DeclareCommon(d, &AdamWParam::wd, &AdamWParam::rescale_grad, &AdamWParam::clip_gradient);
  }
};

struct LambPhase1Param : Params<LambPhase1Param> {
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-6f, wd = 0, rescale_grad = 1, clip_gradient = -1;
  int t = 0;
  bool bias_correction = true;
  static void Declare(ParamDecl<LambPhase1Param>& d) {
    d.field("beta1", &LambPhase1Param::beta1)
        .set_default(0.9f)
        .describe("The decay rate for the 1st moment estimates.");
    d.field("beta2", &LambPhase1Param::beta2)
        .set_default(0.999f)
        .describe("The decay rate for the 2nd moment estimates.");
    d.field("epsilon", &LambPhase1Param::epsilon)
        .set_default(1e-6f)
        .describe("A small constant for numerical stability.");
    d.field("t", &LambPhase1Param::t).describe("Index update count (for the bias correction).");
    d.field("bias_correction", &LambPhase1Param::bias_correction)
        .set_default(true)
        .describe("Whether to use bias correction.");
    DeclareCommon(d, &LambPhase1Param::wd, &LambPhase1Param::rescale_grad,
                  &LambPhase1Param::clip_gradient);
  }
};

struct LambPhase2Param : Params<LambPhase2Param> {
  float lr = 0, lower_bound = -1, upper_bound = -1;
  static void Declare(ParamDecl<LambPhase2Param>& d) {
    DeclareLr(d, &LambPhase2Param::lr);
    d.field("lower_bound", &LambPhase2Param::lower_bound)
        .set_default(-1.f)
        .describe("Lower limit of norm of weight. If lower_bound <= 0, Lower limit is not set");
    d.field("upper_bound", &LambPhase2Param::upper_bound)
        .set_default(-1.f)
        .describe("Upper limit of norm of weight. If upper_bound <= 0, Upper limit is not set");
  }
};

// mshadow_op::clip: x clamped to [-bound, bound].
template <typename T>
TS_XINLINE T ClipBound(T x, T bound) {
  return x > bound ? bound : (x < -bound ? -bound : x);
}

// Each kernel reads the weight and gradient of element i before writing
// anything, so out may alias the weight (out=weight).
template <int req>
struct sgd_kernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, const T* w, const T* g, T clip, T lr, T wd,
                             T rescale) {
    const T wi = w[i], gi = g[i];
    if (clip >= T(0))
      AssignReq<req>(out[i], (T(1) - lr * wd) * wi - lr * ClipBound(rescale * gi, clip));
    else
      AssignReq<req>(out[i], (T(1) - lr * wd) * wi - (lr * rescale) * gi);
  }
};

template <int req>
struct sgd_mom_kernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, T* mom, const T* w, const T* g, T clip, T momentum,
                             T lr, T wd, T rescale) {
    const T wi = w[i], gi = g[i];
    if (clip >= T(0))
      mom[i] = momentum * mom[i] - lr * wd * wi - lr * ClipBound(rescale * gi, clip);
    else
      mom[i] = momentum * mom[i] - lr * wd * wi - lr * rescale * gi;
    AssignReq<req>(out[i], wi + mom[i]);
  }
};

template <int req>
struct nag_mom_kernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, T* mom, const T* w, const T* g, T clip, T momentum,
                             T lr, T wd, T rescale) {
    const T wi = w[i];
    const T gr = clip >= T(0) ? ClipBound(rescale * g[i], clip) : rescale * g[i];
    const T m = momentum * mom[i];
    const T step = lr * (gr + wd * wi);
    mom[i] = m - step;
    AssignReq<req>(out[i], wi - m + (momentum + T(1)) * (m - step));
  }
};

template <int req>
struct adam_kernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, T* mean, T* var, const T* w, const T* g, T clip,
                             T rescale, T beta1, T beta2, T lr, T wd, T eps) {
    const T wi = w[i];
    T gr = g[i] * rescale + wi * wd;
    if (clip >= T(0)) gr = ClipBound(gr, clip);
    mean[i] = beta1 * mean[i] + (T(1) - beta1) * gr;
    var[i] = beta2 * var[i] + (T(1) - beta2) * gr * gr;
    AssignReq<req>(out[i], wi - lr * mean[i] / (std::sqrt(var[i]) + eps));
  }
};

template <int req>
struct rmsprop_kernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, T* n, const T* w, const T* g, T clip, T rescale,
                             T gamma1, T lr, T wd, T clip_weights, T eps) {
    const T wi = w[i];
    T gr = rescale * g[i] + wd * wi;
    if (clip >= T(0)) gr = ClipBound(gr, clip);
    n[i] = (T(1) - gamma1) * (gr * gr) + gamma1 * n[i];
    T v = wi - lr * (gr / std::sqrt(n[i] + eps));
    if (clip_weights >= T(0)) v = ClipBound(v, clip_weights);
    AssignReq<req>(out[i], v);
  }
};

template <int req>
struct rmspropalex_kernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, T* n, T* gs, T* delta, const T* w, const T* g,
                             T clip, T rescale, T gamma1, T gamma2, T lr, T wd, T clip_weights,
                             T eps) {
    const T wi = w[i];
    T gr = rescale * g[i] + wd * wi;
    if (clip >= T(0)) gr = ClipBound(gr, clip);
    n[i] = (T(1) - gamma1) * gr * gr + gamma1 * n[i];
    gs[i] = (T(1) - gamma1) * gr + gamma1 * gs[i];
    delta[i] = gamma2 * delta[i] - lr * gr / std::sqrt(n[i] - gs[i] * gs[i] + eps);
    const T v = wi + delta[i];
    AssignReq<req>(out[i], clip_weights >= T(0) ? ClipBound(v, clip_weights) : v);
  }
};

template <typename T>
TS_XINLINE T SignOf(T x) {
  return T((x > T(0)) - (x < T(0)));
}

// Gradient rescaled, then clipped when clip >= 0.
template <typename T>
TS_XINLINE T ScaledGrad(T g, T rescale, T clip) {
  return clip >= T(0) ? ClipBound(rescale * g, clip) : rescale * g;
}

template <int req>
struct signsgd_kernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, const T* w, const T* g, T lr, T wd) {
    AssignReq<req>(out[i], (T(1) - lr * wd) * w[i] - lr * SignOf(g[i]));
  }
};

template <int req>
struct signum_kernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, T* mom, const T* w, const T* g, T clip, T momentum,
                             T lr, T wd, T rescale, T wd_lh) {
    const T wi = w[i];
    mom[i] = momentum * mom[i] - (T(1) - momentum) * wd * wi -
             (T(1) - momentum) * ScaledGrad(g[i], rescale, clip);
    AssignReq<req>(out[i], (T(1) - lr * wd_lh) * wi + lr * SignOf(mom[i]));
  }
};

template <int req>
struct ftrl_kernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, T* z, T* n, const T* w, const T* g, T clip,
                             T rescale, T lr, T lamda1, T beta, T wd) {
    const T wi = w[i];
    const T gr = ScaledGrad(g[i], rescale, clip);
    z[i] += gr - (std::sqrt(n[i] + gr * gr) - std::sqrt(n[i])) * wi / lr;
    n[i] += gr * gr;
    const T v = (SignOf(z[i]) * lamda1 - z[i]) / ((beta + std::sqrt(n[i])) / lr + wd);
    AssignReq<req>(out[i], std::abs(z[i]) > lamda1 ? v : T(0));
  }
};

template <int req>
struct adamw_kernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, T* mean, T* var, const T* w, const T* g, T clip,
                             T rescale, T beta1, T beta2, T lr, T wd, T eta, T eps) {
    const T wi = w[i];
    const T gr = ScaledGrad(g[i], rescale, clip);
    mean[i] = beta1 * mean[i] + (T(1) - beta1) * gr;
    var[i] = beta2 * var[i] + (T(1) - beta2) * gr * gr;
    AssignReq<req>(out[i], wi - eta * (lr * mean[i] / (std::sqrt(var[i]) + eps) + wd * wi));
  }
};

// Phase 1 of LAMB: the moments, and the update direction g (the output).
template <int req>
struct lamb_phase1_kernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, T* mean, T* var, const T* w, const T* g, T clip,
                             T rescale, T beta1, T beta2, T wd, T eps, T corr1, T corr2) {
    const T gr = ScaledGrad(g[i], rescale, clip);
    mean[i] = beta1 * mean[i] + (T(1) - beta1) * gr;
    var[i] = beta2 * var[i] + (T(1) - beta2) * gr * gr;
    AssignReq<req>(out[i], (mean[i] / corr1) / (std::sqrt(var[i] / corr2) + eps) + wd * w[i]);
  }
};

// Phase 2 of LAMB: the step scaled by the trust ratio r1 / r2.
template <int req>
struct lamb_phase2_kernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, const T* w, const T* g, const T* r1p, const T* r2p,
                             T lr, T lower, T upper) {
    T r1 = r1p[0];
    const T r2 = r2p[0];
    if (lower > T(0) && r1 < lower) r1 = lower;
    if (upper > T(0) && r1 > upper) r1 = upper;
    const T ratio = (r1 == T(0) || r2 == T(0)) ? T(1) : r1 / r2;
    AssignReq<req>(out[i], w[i] - lr * ratio * g[i]);
  }
};

// float32 and float64 (MXNet's real types, without float16).
template <typename F>
void SwitchOptimizerDType(DType t, const char* op, F&& fn) {
  switch (t) {
    case DType::kFloat32:
      return fn(TypeTag<float>{});
    case DType::kFloat64:
      return fn(TypeTag<double>{});
    default:
      TS_THROW << op << ": dtype " << DTypeName(t) << " is not supported (float32, float64)";
  }
}

// The states are updated whatever the request; kNullOp skips the weight.
template <typename Launch>
void RunUpdate(const std::vector<OpReqType>& req, Launch&& launch) {
  if (req[0] == kAddTo)
    launch(std::integral_constant<int, kAddTo>{});
  else if (req[0] == kNullOp)
    launch(std::integral_constant<int, kNullOp>{});
  else
    launch(std::integral_constant<int, kWriteTo>{});
}

template <typename xpu>
void SGDUpdate(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
               const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<SGDParam>(attrs);
  SwitchOptimizerDType(in[0].dtype(), "sgd_update", [&](auto tag) {
    using T = typename decltype(tag)::type;
    RunUpdate(req, [&](auto r) {
      Kernel<sgd_kernel<r.value>, xpu>::Launch(ctx.run_ctx, in[0].shape().Size(), out[0].dptr<T>(),
                                               in[0].dptr<T>(), in[1].dptr<T>(), T(p.clip_gradient),
                                               T(p.lr), T(p.wd), T(p.rescale_grad));
    });
  });
}

template <typename xpu>
void SGDMomUpdate(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<SGDMomParam>(attrs);
  SwitchOptimizerDType(in[0].dtype(), "sgd_mom_update", [&](auto tag) {
    using T = typename decltype(tag)::type;
    RunUpdate(req, [&](auto r) {
      Kernel<sgd_mom_kernel<r.value>, xpu>::Launch(
          ctx.run_ctx, in[0].shape().Size(), out[0].dptr<T>(), in[2].dptr<T>(), in[0].dptr<T>(),
          in[1].dptr<T>(), T(p.clip_gradient), T(p.momentum), T(p.lr), T(p.wd), T(p.rescale_grad));
    });
  });
}

template <typename xpu>
void NAGMomUpdate(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<NAGMomParam>(attrs);
  SwitchOptimizerDType(in[0].dtype(), "nag_mom_update", [&](auto tag) {
    using T = typename decltype(tag)::type;
    RunUpdate(req, [&](auto r) {
      Kernel<nag_mom_kernel<r.value>, xpu>::Launch(
          ctx.run_ctx, in[0].shape().Size(), out[0].dptr<T>(), in[2].dptr<T>(), in[0].dptr<T>(),
          in[1].dptr<T>(), T(p.clip_gradient), T(p.momentum), T(p.lr), T(p.wd), T(p.rescale_grad));
    });
  });
}

template <typename xpu>
void AdamUpdate(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<AdamParam>(attrs);
  SwitchOptimizerDType(in[0].dtype(), "adam_update", [&](auto tag) {
    using T = typename decltype(tag)::type;
    RunUpdate(req, [&](auto r) {
      Kernel<adam_kernel<r.value>, xpu>::Launch(
          ctx.run_ctx, in[0].shape().Size(), out[0].dptr<T>(), in[2].dptr<T>(), in[3].dptr<T>(),
          in[0].dptr<T>(), in[1].dptr<T>(), T(p.clip_gradient), T(p.rescale_grad), T(p.beta1),
          T(p.beta2), T(p.lr), T(p.wd), T(p.epsilon));
    });
  });
}

template <typename xpu>
void RMSPropUpdate(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<RMSPropParam>(attrs);
  SwitchOptimizerDType(in[0].dtype(), "rmsprop_update", [&](auto tag) {
    using T = typename decltype(tag)::type;
    RunUpdate(req, [&](auto r) {
      Kernel<rmsprop_kernel<r.value>, xpu>::Launch(
          ctx.run_ctx, in[0].shape().Size(), out[0].dptr<T>(), in[2].dptr<T>(), in[0].dptr<T>(),
          in[1].dptr<T>(), T(p.clip_gradient), T(p.rescale_grad), T(p.gamma1), T(p.lr), T(p.wd),
          T(p.clip_weights), T(p.epsilon));
    });
  });
}

template <typename xpu>
void RMSPropAlexUpdate(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<RMSPropAlexParam>(attrs);
  SwitchOptimizerDType(in[0].dtype(), "rmspropalex_update", [&](auto tag) {
    using T = typename decltype(tag)::type;
    RunUpdate(req, [&](auto r) {
      Kernel<rmspropalex_kernel<r.value>, xpu>::Launch(
          ctx.run_ctx, in[0].shape().Size(), out[0].dptr<T>(), in[2].dptr<T>(), in[3].dptr<T>(),
          in[4].dptr<T>(), in[0].dptr<T>(), in[1].dptr<T>(), T(p.clip_gradient), T(p.rescale_grad),
          T(p.gamma1), T(p.gamma2), T(p.lr), T(p.wd), T(p.clip_weights), T(p.epsilon));
    });
  });
}

template <typename xpu>
void SignSGDUpdate(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<SignSGDParam>(attrs);
  SwitchOptimizerDType(in[0].dtype(), "signsgd_update", [&](auto tag) {
    using T = typename decltype(tag)::type;
    RunUpdate(req, [&](auto r) {
      Kernel<signsgd_kernel<r.value>, xpu>::Launch(ctx.run_ctx, in[0].shape().Size(),
                                                   out[0].dptr<T>(), in[0].dptr<T>(),
                                                   in[1].dptr<T>(), T(p.lr), T(p.wd));
    });
  });
}

template <typename xpu>
void SignumUpdate(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<SignumParam>(attrs);
  SwitchOptimizerDType(in[0].dtype(), "signum_update", [&](auto tag) {
    using T = typename decltype(tag)::type;
    RunUpdate(req, [&](auto r) {
      Kernel<signum_kernel<r.value>, xpu>::Launch(
          ctx.run_ctx, in[0].shape().Size(), out[0].dptr<T>(), in[2].dptr<T>(), in[0].dptr<T>(),
          in[1].dptr<T>(), T(p.clip_gradient), T(p.momentum), T(p.lr), T(p.wd), T(p.rescale_grad),
          T(p.wd_lh));
    });
  });
}

template <typename xpu>
void FtrlUpdate(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<FtrlParam>(attrs);
  SwitchOptimizerDType(in[0].dtype(), "ftrl_update", [&](auto tag) {
    using T = typename decltype(tag)::type;
    RunUpdate(req, [&](auto r) {
      Kernel<ftrl_kernel<r.value>, xpu>::Launch(
          ctx.run_ctx, in[0].shape().Size(), out[0].dptr<T>(), in[2].dptr<T>(), in[3].dptr<T>(),
          in[0].dptr<T>(), in[1].dptr<T>(), T(p.clip_gradient), T(p.rescale_grad), T(p.lr),
          T(p.lamda1), T(p.beta), T(p.wd));
    });
  });
}

template <typename xpu>
void AdamWUpdate(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<AdamWParam>(attrs);
  SwitchOptimizerDType(in[0].dtype(), "adamw_update", [&](auto tag) {
    using T = typename decltype(tag)::type;
    RunUpdate(req, [&](auto r) {
      Kernel<adamw_kernel<r.value>, xpu>::Launch(
          ctx.run_ctx, in[0].shape().Size(), out[0].dptr<T>(), in[2].dptr<T>(), in[3].dptr<T>(),
          in[0].dptr<T>(), in[1].dptr<T>(), T(p.clip_gradient), T(p.rescale_grad), T(p.beta1),
          T(p.beta2), T(p.lr), T(p.wd), T(p.eta), T(p.epsilon));
    });
  });
}

template <typename xpu>
void LambPhase1(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<LambPhase1Param>(attrs);
  SwitchOptimizerDType(in[0].dtype(), "lamb_update_phase1", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T corr1 = p.bias_correction ? T(1) - std::pow(T(p.beta1), T(p.t)) : T(1);
    const T corr2 = p.bias_correction ? T(1) - std::pow(T(p.beta2), T(p.t)) : T(1);
    RunUpdate(req, [&](auto r) {
      Kernel<lamb_phase1_kernel<r.value>, xpu>::Launch(
          ctx.run_ctx, in[0].shape().Size(), out[0].dptr<T>(), in[2].dptr<T>(), in[3].dptr<T>(),
          in[0].dptr<T>(), in[1].dptr<T>(), T(p.clip_gradient), T(p.rescale_grad), T(p.beta1),
          T(p.beta2), T(p.wd), T(p.epsilon), corr1, corr2);
    });
  });
}

template <typename xpu>
void LambPhase2(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<LambPhase2Param>(attrs);
  SwitchOptimizerDType(in[0].dtype(), "lamb_update_phase2", [&](auto tag) {
    using T = typename decltype(tag)::type;
    RunUpdate(req, [&](auto r) {
      Kernel<lamb_phase2_kernel<r.value>, xpu>::Launch(
          ctx.run_ctx, in[0].shape().Size(), out[0].dptr<T>(), in[0].dptr<T>(), in[1].dptr<T>(),
          in[2].dptr<T>(), in[3].dptr<T>(), T(p.lr), T(p.lower_bound), T(p.upper_bound));
    });
  });
}

}  // namespace tessera::op
