// Binary operators with a scalar operand on either side (_plus_scalar:
// x + s, _rminus_scalar: s - x, ...), sharing the binary functors of
// elemwise_binary_op-inl.h, and the FCompute<xpu> of the forward and
// backward ops.
//
// The scalar is converted to the array's arithmetic type (clamped to an
// integer type's range, as a C cast would without the undefined cases), so
// int32 x + 2.7 adds 2, as MXNet. Comparisons and logic on integer arrays
// compare against the exact scalar instead (int32 x >= 2.5 is x >= 3).
#pragma once

#include <limits>
#include <type_traits>
#include <vector>

#include "ops/tensor/elemwise_binary_op-inl.h"

namespace tessera::op {

struct ScalarParam : Params<ScalarParam> {
  double scalar = 1;
  bool is_int = true;
  static void Declare(ParamDecl<ScalarParam>& d) {
    d.field("scalar", &ScalarParam::scalar).set_default(1.0).describe("The scalar operand.");
    d.field("is_int", &ScalarParam::is_int)
        .set_default(true)
        .describe(
            "Whether the scalar was written as an integer (read from MXNet's symbol files; "
            "the result dtype is always the array's).");
  }
};

// `s` in type A without undefined behaviour: NaN becomes 0, values beyond an
// integer type's range its bounds.
template <typename A>
A ScalarAs(double s) {
  if constexpr (std::is_floating_point_v<A>) {
    return static_cast<A>(s);
  } else if constexpr (std::is_same_v<A, bool>) {
    return s != 0;
  } else {
    if (s != s) return A(0);
    if (s <= static_cast<double>(std::numeric_limits<A>::min()))
      return std::numeric_limits<A>::min();
    if (s >= static_cast<double>(std::numeric_limits<A>::max()))
      return std::numeric_limits<A>::max();
    return static_cast<A>(s);
  }
}

// The type a scalar op computes in for element type T.
template <typename OP, typename T>
using ScalarCalcType =
    std::conditional_t<OP::kTypes == kAllTypes && std::is_integral_v<T> && !std::is_same_v<T, bool>,
                       double, AccType<T>>;

// x op s (kReverse false) or s op x (kReverse true).
template <typename OP, bool kReverse>
struct scalar_fn {
  template <typename S>
  TS_XINLINE static S Map(S x, S s) {
    return kReverse ? OP::Map(s, x) : OP::Map(x, s);
  }
};

template <typename OP, bool kReverse, int req>
struct scalar_kernel {
  template <typename T, typename S>
  TS_XINLINE static void Map(int64_t i, T* out, const T* in, S s) {
    AssignReq<req>(out[i], scalar_fn<OP, kReverse>::Map(static_cast<S>(in[i]), s));
  }
};

// in_grad = g * G(x, s) (or G(s, x) for the reversed forms).
template <typename G, bool kReverse, int req>
struct scalar_grad_kernel {
  template <typename T, typename A>
  TS_XINLINE static void Map(int64_t i, T* out, const T* g, const T* x, A s) {
    AssignReq<req>(out[i],
                   static_cast<A>(g[i]) * scalar_fn<G, kReverse>::Map(static_cast<A>(x[i]), s));
  }
};

template <typename xpu, typename OP, bool kReverse>
void ScalarCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const double scalar = ParamsOf<ScalarParam>(attrs).scalar;
  SwitchElemwiseDType<OP::kTypes>(
      out[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        using S = ScalarCalcType<OP, T>;
        const S s = ScalarAs<S>(scalar);
        const int64_t n = out[0].Size();
        T* o = out[0].dptr<T>();
        const T* x = in[0].dptr<T>();
        SwitchReq(req[0], [&](auto r) {
          if constexpr (std::is_same_v<xpu, cpu>) {
            CpuMap<r.value>(ctx.run_ctx, o, n, [=](int64_t i) {
              return scalar_fn<OP, kReverse>::Map(static_cast<S>(x[i]), s);
            });
          } else {
            Kernel<scalar_kernel<OP, kReverse, r.value>, xpu>::Launch(ctx.run_ctx, n, o, x, s);
          }
        });
      },
      attrs.op->name().c_str());
}

// Inputs (out_grad, data) -> data's gradient.
template <typename xpu, typename G, bool kReverse>
void ScalarGradCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const double scalar = ParamsOf<ScalarParam>(attrs).scalar;
  SwitchElemwiseDType<G::kTypes>(
      out[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = AccType<T>;
        const A s = ScalarAs<A>(scalar);
        const int64_t n = out[0].Size();
        T* o = out[0].dptr<T>();
        const T* g = in[0].dptr<T>();
        const T* x = in[1].dptr<T>();
        SwitchReq(req[0], [&](auto r) {
          if constexpr (std::is_same_v<xpu, cpu>) {
            CpuMap<r.value>(ctx.run_ctx, o, n, [=](int64_t i) {
              return static_cast<A>(g[i]) * scalar_fn<G, kReverse>::Map(static_cast<A>(x[i]), s);
            });
          } else {
            Kernel<scalar_grad_kernel<G, kReverse, r.value>, xpu>::Launch(ctx.run_ctx, n, o, g, x,
                                                                          s);
          }
        });
      },
      attrs.op->name().c_str());
}

// (name, functor, reversed) of every scalar op; (name, derivative, reversed)
// of the backward ops; the comparison and logic ops have zero gradients.
// clang-format off
#define TS_SCALAR_OPS(X)                                                                        \
  X(_plus_scalar, add, false)                                                                   \
  X(_minus_scalar, sub, false)                                                                  \
  X(_rminus_scalar, sub, true) X(_mul_scalar, mul, false) X(_div_scalar, div, false)            \
      X(_rdiv_scalar, div, true) X(_mod_scalar, mod, false) X(_rmod_scalar, mod, true)          \
          X(_power_scalar, power, false) X(_rpower_scalar, power, true)                         \
              X(_maximum_scalar, maximum, false) X(_minimum_scalar, minimum, false)             \
                  X(_hypot_scalar, hypot, false) X(_equal_scalar, equal, false)                 \
                      X(_not_equal_scalar, not_equal, false) X(_greater_scalar, greater, false) \
                          X(_greater_equal_scalar, greater_equal, false)                        \
                              X(_lesser_scalar, lesser, false)                                  \
                                  X(_lesser_equal_scalar, lesser_equal, false)                  \
                                      X(_logical_and_scalar, logical_and, false)                \
                                          X(_logical_or_scalar, logical_or, false)              \
                                              X(_logical_xor_scalar, logical_xor, false)
#define TS_SCALAR_GRAD_OPS(X)                                                                 \
  X(_backward_rdiv_scalar, div_rgrad, true)                                                   \
  X(_backward_rmod_scalar, mod_rgrad, true)                                                   \
  X(_backward_power_scalar, power_lgrad, false) X(_backward_rpower_scalar, power_rgrad, true) \
      X(_backward_maximum_scalar, maximum_lgrad, false)                                       \
          X(_backward_minimum_scalar, minimum_lgrad, false)                                   \
              X(_backward_hypot_scalar, hypot_lgrad, false)
// clang-format on

}  // namespace tessera::op
