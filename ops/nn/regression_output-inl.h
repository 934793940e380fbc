// The regression output layers (LinearRegressionOutput, MAERegressionOutput,
// LogisticRegressionOutput): parameters and element kernels shared by the
// CPU (regression_output.cc) and GPU (regression_output.cu) registrations.
#pragma once

#include <cmath>
#include <vector>

#include "engine/op/kernel_launch.h"
#include "ops/nn/nn_common.h"

namespace tessera::op {

struct RegressionOutputParam : Params<RegressionOutputParam> {
  float grad_scale = 1.f;
  static void Declare(ParamDecl<RegressionOutputParam>& d) {
    d.field("grad_scale", &RegressionOutputParam::grad_scale)
        .set_default(1.f)
        .describe("Scale the gradient by a float factor");
  }
};

enum RegressionKind { kLinear, kMAE, kLogistic };

// out = data (linear, MAE) or sigmoid(data) (logistic).
template <RegressionKind kind, int req>
struct regression_forward {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, const T* in) {
    using A = AccType<T>;
    using std::exp;
    const A x = static_cast<A>(in[i]);
    if constexpr (kind == kLogistic)
      AssignReq<req>(out[i], A(1) / (A(1) + exp(-x)));
    else
      AssignReq<req>(out[i], x);
  }
};

// grad = (out - label) * scale, or its sign for MAE (MXNet's minus_sign: -1
// at a tie).
template <RegressionKind kind, int req>
struct regression_backward {
  template <typename T, typename A>
  TS_XINLINE static void Map(int64_t i, T* grad, const T* out, const T* label, A scale) {
    const A diff = static_cast<A>(out[i]) - static_cast<A>(label[i]);
    A v;
    if constexpr (kind == kMAE)
      v = diff > A(0) ? A(1) : A(-1);
    else
      v = diff;
    AssignReq<req>(grad[i], v * scale);
  }
};

struct regression_zero {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out) {
    out[i] = T(0);
  }
};

template <typename xpu, RegressionKind kind>
void RegressionForward(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  SwitchFloatDType(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchReq(req[0], [&](auto r) {
      Kernel<regression_forward<kind, r.value>, xpu>::Launch(ctx.run_ctx, out[0].shape().Size(),
                                                             out[0].dptr<T>(), in[0].dptr<T>());
    });
  });
}

// Inputs: label, out; outputs: the data gradient, the label gradient (zeros).
template <typename xpu, RegressionKind kind>
void RegressionBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<RegressionOutputParam>(attrs);
  SwitchFloatDType(in[1].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = AccType<T>;
    const Shape& ls = in[0].shape();
    const int64_t n = out[0].shape().Size();
    if (n > 0) {
      const double num_output = double(ls.Size()) / double(ls[0]);
      const A scale = static_cast<A>(double(p.grad_scale) / num_output);
      SwitchReq(req[0], [&](auto r) {
        Kernel<regression_backward<kind, r.value>, xpu>::Launch(
            ctx.run_ctx, n, out[0].dptr<T>(), in[1].dptr<T>(), in[0].dptr<T>(), scale);
      });
    }
    if (req[1] == kWriteTo || req[1] == kWriteInplace)
      Kernel<regression_zero, xpu>::Launch(ctx.run_ctx, out[1].shape().Size(), out[1].dptr<T>());
  });
}

}  // namespace tessera::op
