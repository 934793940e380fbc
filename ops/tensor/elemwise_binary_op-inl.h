// Binary elementwise functors, shared by the same-shape ops (elemwise_add,
// ...), the broadcasting ops (broadcast_add, ...) and the scalar forms
// (_plus_scalar, ...), and the same-shape ops' FCompute<xpu>.
//
// A functor has `kTypes` and `A Map(A a, A b)` computing in A = AccType<T>.
// Gradient functors give d out / d a (`*_lgrad`) and d out / d b (`*_rgrad`)
// at (a, b); the backward kernels multiply by the output gradient.
//
// Integer semantics (no input may crash the process):
//  - division truncates toward zero (as C and MXNet); x / 0 is 0, and
//    INT_MIN / -1 wraps to INT_MIN instead of trapping;
//  - mod takes the sign of the divisor (Python and NumPy); x mod 0 is 0;
//  - power with a negative exponent is 1 / a^|b| truncated: 1 for a = 1,
//    +-1 for a = -1, and 0 otherwise (0 as well for 0^negative).
// Floating-point results follow IEEE (x / 0 = +-inf), except x mod 0, which
// is 0 as in MXNet.
#pragma once

#include <type_traits>
#include <vector>

#include "ops/tensor/elemwise_common.h"
#include "ops/tensor/elemwise_math.h"

namespace tessera::op {

namespace binary {

// 0 - a without signed overflow (INT_MIN stays INT_MIN).
template <typename A>
TS_XINLINE A WrapNegate(A a) {
  if constexpr (std::is_integral_v<A> && std::is_signed_v<A>)
    return static_cast<A>(std::make_unsigned_t<A>(0) - static_cast<std::make_unsigned_t<A>>(a));
  else
    return A(-a);
}

template <typename A>
TS_XINLINE A IntDiv(A a, A b) {
  if (b == A(0)) return A(0);
  if constexpr (std::is_signed_v<A>) {
    if (b == A(-1)) return WrapNegate(a);
  }
  return A(a / b);
}

// a - floor(a / b) * b: the remainder with the divisor's sign; 0 when b is
// 0, for every type, as MXNet's mshadow_op::mod (src/operator/mshadow_op.h).
template <typename A>
TS_XINLINE A FloorMod(A a, A b) {
  if constexpr (std::is_floating_point_v<A>) {
    if (b == A(0)) return A(0);
    A r = math::fmod(a, b);
    if (r != A(0) && ((r < A(0)) != (b < A(0)))) r += b;
    return r;
  } else if constexpr (std::is_unsigned_v<A>) {
    return b == A(0) ? A(0) : A(a % b);
  } else {
    if (b == A(0) || b == A(-1)) return A(0);
    A r = A(a % b);
    if (r != A(0) && ((r < A(0)) != (b < A(0)))) r = A(r + b);
    return r;
  }
}

// floor(a / b).
template <typename A>
TS_XINLINE A FloorDiv(A a, A b) {
  if constexpr (std::is_floating_point_v<A>) {
    return math::floor(a / b);
  } else if constexpr (std::is_unsigned_v<A>) {
    return IntDiv(a, b);
  } else {
    if (b == A(0)) return A(0);
    A q = IntDiv(a, b);
    if (b != A(-1) && A(a % b) != A(0) && ((a < A(0)) != (b < A(0)))) q = A(q - 1);
    return q;
  }
}

// Signed integers wrap around on overflow, as NumPy's and MXNet's do (two's
// complement), computed in the unsigned type, where wrapping is defined
// (signed overflow is undefined behaviour in C++).
template <typename A>
TS_XINLINE A WrapAdd(A a, A b) {
  if constexpr (std::is_integral_v<A> && std::is_signed_v<A>) {
    using U = std::make_unsigned_t<A>;
    return A(U(U(a) + U(b)));
  } else {
    return A(a + b);
  }
}
template <typename A>
TS_XINLINE A WrapSub(A a, A b) {
  if constexpr (std::is_integral_v<A> && std::is_signed_v<A>) {
    using U = std::make_unsigned_t<A>;
    return A(U(U(a) - U(b)));
  } else {
    return A(a - b);
  }
}
template <typename A>
TS_XINLINE A WrapMul(A a, A b) {
  if constexpr (std::is_integral_v<A> && std::is_signed_v<A> && sizeof(A) >= sizeof(int)) {
    using U = std::make_unsigned_t<A>;
    return A(U(U(a) * U(b)));
  } else {
    return A(a * b);  // narrower types multiply in int, which holds the product
  }
}

template <typename A>
TS_XINLINE A IntPow(A a, A b) {
  if constexpr (std::is_signed_v<A>) {
    if (b < A(0)) {
      if (a == A(1)) return A(1);
      if (a == A(-1)) return (b & A(1)) ? A(-1) : A(1);
      return A(0);
    }
  }
  A result = A(1);
  while (b != A(0)) {
    if (b & A(1)) result = WrapMul(result, a);
    b = A(b >> 1);
    a = WrapMul(a, a);
  }
  return result;
}

#define TS_BINARY_FUNCTOR(name, types, expr)                              \
  struct name {                                                           \
    static constexpr int kTypes = types;                                  \
    template <typename A>                                                 \
    TS_XINLINE static A Map([[maybe_unused]] A a, [[maybe_unused]] A b) { \
      return expr;                                                        \
    }                                                                     \
  };

// A functor with one form for floating-point types and another for integers.
#define TS_BINARY_FUNCTOR_BY_KIND(name, types, float_expr, int_expr) \
  struct name {                                                      \
    static constexpr int kTypes = types;                             \
    template <typename A>                                            \
    TS_XINLINE static A Map(A a, A b) {                              \
      if constexpr (std::is_floating_point_v<A>)                     \
        return float_expr;                                           \
      else                                                           \
        return int_expr;                                             \
    }                                                                \
  };

TS_BINARY_FUNCTOR(add, kNumericTypes, WrapAdd(a, b))
TS_BINARY_FUNCTOR(sub, kNumericTypes, WrapSub(a, b))
TS_BINARY_FUNCTOR(mul, kNumericTypes, WrapMul(a, b))
TS_BINARY_FUNCTOR_BY_KIND(div, kNumericTypes, a / b, IntDiv(a, b))
TS_BINARY_FUNCTOR(mod, kNumericTypes, FloorMod(a, b))
TS_BINARY_FUNCTOR_BY_KIND(power, kNumericTypes, math::pow(a, b), IntPow(a, b))
// maximum and minimum propagate NaN, as NumPy's.
TS_BINARY_FUNCTOR(maximum, kNumericTypes, (a > b || math::isnan(a)) ? a : b)
TS_BINARY_FUNCTOR(minimum, kNumericTypes, (a < b || math::isnan(a)) ? a : b)
TS_BINARY_FUNCTOR(hypot, kFloatTypes, math::hypot(a, b))
// Comparisons and logic give 1 or 0 in the input's dtype, as MXNet.
TS_BINARY_FUNCTOR(equal, kAllTypes, a == b ? A(1) : A(0))
TS_BINARY_FUNCTOR(not_equal, kAllTypes, a != b ? A(1) : A(0))
TS_BINARY_FUNCTOR(greater, kAllTypes, a > b ? A(1) : A(0))
TS_BINARY_FUNCTOR(greater_equal, kAllTypes, a >= b ? A(1) : A(0))
TS_BINARY_FUNCTOR(lesser, kAllTypes, a < b ? A(1) : A(0))
TS_BINARY_FUNCTOR(lesser_equal, kAllTypes, a <= b ? A(1) : A(0))
TS_BINARY_FUNCTOR(logical_and, kAllTypes, (a != A(0) && b != A(0)) ? A(1) : A(0))
TS_BINARY_FUNCTOR(logical_or, kAllTypes, (a != A(0) || b != A(0)) ? A(1) : A(0))
TS_BINARY_FUNCTOR(logical_xor, kAllTypes, ((a != A(0)) != (b != A(0))) ? A(1) : A(0))

// Derivatives. kTypes is the backward op's dtype class.
TS_BINARY_FUNCTOR(one, kNumericTypes, A(1))
TS_BINARY_FUNCTOR(minus_one, kNumericTypes, A(-1))
TS_BINARY_FUNCTOR(mul_lgrad, kNumericTypes, b)
TS_BINARY_FUNCTOR(mul_rgrad, kNumericTypes, a)
TS_BINARY_FUNCTOR(div_lgrad, kNumericTypes, div::Map(A(1), b))
TS_BINARY_FUNCTOR(div_rgrad, kNumericTypes, A(-div::Map(a, A(b* b))))
TS_BINARY_FUNCTOR(mod_rgrad, kNumericTypes, A(-FloorDiv(a, b)))
TS_BINARY_FUNCTOR(power_lgrad, kFloatTypes, b* math::pow(a, b - A(1)))
TS_BINARY_FUNCTOR(power_rgrad, kFloatTypes, math::pow(a, b) * math::log(a))
TS_BINARY_FUNCTOR(maximum_lgrad, kNumericTypes, a >= b ? A(1) : A(0))
TS_BINARY_FUNCTOR(maximum_rgrad, kNumericTypes, a >= b ? A(0) : A(1))
TS_BINARY_FUNCTOR(minimum_lgrad, kNumericTypes, a <= b ? A(1) : A(0))
TS_BINARY_FUNCTOR(minimum_rgrad, kNumericTypes, a <= b ? A(0) : A(1))
TS_BINARY_FUNCTOR(hypot_lgrad, kFloatTypes, a / math::hypot(a, b))
TS_BINARY_FUNCTOR(hypot_rgrad, kFloatTypes, b / math::hypot(a, b))

#undef TS_BINARY_FUNCTOR

}  // namespace binary

// --- same-shape kernels ---

// OP(a[i], b[i]) in the accumulation type.
template <typename OP>
struct binary_value {
  template <typename T>
  TS_XINLINE static auto Value(int64_t i, const T* a, const T* b) {
    using A = AccType<T>;
    return OP::Map(static_cast<A>(a[i]), static_cast<A>(b[i]));
  }
};

// g * G(a, b): one input gradient of a binary op.
template <typename G>
struct binary_grad_value {
  template <typename T>
  TS_XINLINE static auto Value(int64_t i, const T* g, const T* a, const T* b) {
    using A = AccType<T>;
    return static_cast<A>(g[i]) * G::Map(static_cast<A>(a[i]), static_cast<A>(b[i]));
  }
};

template <typename xpu, typename OP, typename T>
void BinarySameLaunch(const OpContext& ctx, OpReqType req, const TBlob& out, const T* a,
                      const T* b) {
  SameShapeMap<xpu, binary_value<OP>, true>(ctx.run_ctx, req, out.dptr<T>(), out.Size(), a, b);
}

template <typename xpu, typename G, typename T>
void BinaryGradSameLaunch(const OpContext& ctx, OpReqType req, const TBlob& out, const T* g,
                          const T* a, const T* b) {
  SameShapeMap<xpu, binary_grad_value<G>>(ctx.run_ctx, req, out.dptr<T>(), out.Size(), g, a, b);
}

// elemwise_add, ...: inputs of one shape.
template <typename xpu, typename OP>
void BinaryCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  SwitchElemwiseDType<OP::kTypes>(
      out[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        BinarySameLaunch<xpu, OP, T>(ctx, req[0], out[0], in[0].dptr<T>(), in[1].dptr<T>());
      },
      attrs.op->name().c_str());
}

// Backward of a same-shape op: inputs (out_grad, lhs, rhs), or just
// (out_grad) when the derivatives are constants; outputs (lhs_grad, rhs_grad).
template <typename xpu, typename LG, typename RG>
void BinaryGradCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  SwitchElemwiseDType<LG::kTypes>(
      out[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* g = in[0].dptr<T>();
        const T* a = in.size() > 1 ? in[1].dptr<T>() : g;
        const T* b = in.size() > 2 ? in[2].dptr<T>() : g;
        BinaryGradSameLaunch<xpu, LG, T>(ctx, req[0], out[0], g, a, b);
        BinaryGradSameLaunch<xpu, RG, T>(ctx, req[1], out[1], g, a, b);
      },
      attrs.op->name().c_str());
}

}  // namespace tessera::op
