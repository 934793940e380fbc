// quadratic: y = a x^2 + b x + c, the reference's example operator, written
// the attribute way. Shared by the CPU (.cc) and GPU (.cu) registrations.
#pragma once

#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/op.h"

namespace tessera::op {

struct QuadraticParam : Params<QuadraticParam> {
  float a = 0, b = 0, c = 0;
  static void Declare(ParamDecl<QuadraticParam>& d) {
    d.field("a", &QuadraticParam::a)
        .set_default(0.f)
        .describe("Coefficient of the quadratic term.");
    d.field("b", &QuadraticParam::b).set_default(0.f).describe("Coefficient of the linear term.");
    d.field("c", &QuadraticParam::c).set_default(0.f).describe("Constant term.");
  }
};

template <int req>
struct quadratic_forward {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, const T* in, float a, float b, float c) {
    const AccType<T> x = in[i];
    AssignReq<req>(out[i], x * (a * x + b) + c);
  }
};

template <int req>
struct quadratic_backward {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* in_grad, const T* out_grad, const T* in, float a,
                             float b, float /*c*/) {
    const AccType<T> x = in[i], g = out_grad[i];
    AssignReq<req>(in_grad[i], g * (2 * a * x + b));
  }
};

// Runs K<req> over out's elements for out's float dtype, with the inputs'
// data and the coefficients a, b, c.
template <typename xpu, template <int> class K, typename... Blobs>
void QuadraticLaunch(const OpContext& ctx, OpReqType req, const QuadraticParam& p, const char* name,
                     const TBlob& out, const Blobs&... in) {
  SwitchFloatDType(
      out.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        SwitchReq(req, [&](auto r) {
          Kernel<K<r.value>, xpu>::Launch(ctx.run_ctx, out.Size(), out.dptr<T>(),
                                          in.template dptr<T>()..., p.a, p.b, p.c);
        });
      },
      name);
}

template <typename xpu>
void QuadraticForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  QuadraticLaunch<xpu, quadratic_forward>(ctx, req[0], ParamsOf<QuadraticParam>(attrs), "quadratic",
                                          out[0], in[0]);
}

template <typename xpu>
void QuadraticBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  QuadraticLaunch<xpu, quadratic_backward>(ctx, req[0], ParamsOf<QuadraticParam>(attrs),
                                           "_backward_quadratic", out[0], in[0], in[1]);
}

}  // namespace tessera::op
