// smooth_l1: the reference's SimpleOp example, a loss that is quadratic near
// zero and linear beyond (sigma2 = scalar^2):
//   f(x) = 0.5 sigma2 x^2       if |x| < 1 / sigma2
//          |x| - 0.5 / sigma2   otherwise
//   f'(x) = sigma2 x inside, sign(x) outside.
// Shared by the CPU (.cc) and GPU (.cu) registrations.
#pragma once

#include "engine/legacy_op/simple_op.h"
#include "engine/op/kernel_launch.h"

namespace tessera::op {

template <int req>
struct smooth_l1_forward {
  template <typename T, typename A>
  TS_XINLINE static void Map(int64_t i, T* out, const T* in, A sigma2) {
    const A x = in[i];
    A y;
    if (x > A(1) / sigma2)
      y = x - A(0.5) / sigma2;
    else if (x < A(-1) / sigma2)
      y = -x - A(0.5) / sigma2;
    else
      y = A(0.5) * x * x * sigma2;
    AssignReq<req>(out[i], y);
  }
};

template <int req>
struct smooth_l1_backward {
  template <typename T, typename A>
  TS_XINLINE static void Map(int64_t i, T* in_grad, const T* out_grad, const T* in, A sigma2) {
    const A x = in[i], g = out_grad[i];
    A d;
    if (x > A(1) / sigma2)
      d = A(1);
    else if (x < A(-1) / sigma2)
      d = A(-1);
    else
      d = sigma2 * x;
    AssignReq<req>(in_grad[i], g * d);
  }
};

template <typename xpu>
void SmoothL1Forward(const TBlob& src, const EnvArguments& env, TBlob* ret, OpReqType req,
                     RunContext ctx) {
  SwitchFloatDType(
      ret->dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = AccType<T>;
        SwitchReq(req, [&](auto r) {
          Kernel<smooth_l1_forward<r.value>, xpu>::Launch(ctx, ret->Size(), ret->dptr<T>(),
                                                          src.dptr<T>(),
                                                          static_cast<A>(env.scalar * env.scalar));
        });
      },
      "smooth_l1");
}

// A gradient that reads the input: the reference's UnaryGradFunctionT2.
template <typename xpu>
void SmoothL1BackwardUseIn(const OutputGrad& out_grad, const Input0& in_data0,
                           const EnvArguments& env, TBlob* in_grad, OpReqType req, RunContext ctx) {
  SwitchFloatDType(
      in_grad->dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = AccType<T>;
        SwitchReq(req, [&](auto r) {
          Kernel<smooth_l1_backward<r.value>, xpu>::Launch(
              ctx, in_grad->Size(), in_grad->dptr<T>(), out_grad.data.dptr<T>(),
              in_data0.data.dptr<T>(), static_cast<A>(env.scalar * env.scalar));
        });
      },
      "_backward_smooth_l1");
}

}  // namespace tessera::op
