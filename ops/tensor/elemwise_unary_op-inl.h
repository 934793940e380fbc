// Unary elementwise operators: the element functors (value and derivative),
// clip's parameters, and the templated FCompute<xpu> shared by the CPU (.cc)
// and GPU (.cu) registrations.
//
// A forward functor has `kTypes` (the dtypes it accepts) and
// `A Map(A x)` computing in A = AccType<T>. A gradient functor has
// `A Map(A g, A v)`: the input gradient from the output gradient g and v, the
// forward input (UseIn) or output (UseOut), as its registration says.
#pragma once

#include <type_traits>
#include <vector>

#include "ops/tensor/elemwise_common.h"
#include "ops/tensor/elemwise_math.h"

namespace tessera::op {

namespace unary {

#define TS_FLOAT_UNARY(name, expr)             \
  struct name {                                \
    static constexpr int kTypes = kFloatTypes; \
    template <typename A>                      \
    TS_XINLINE static A Map(A x) {             \
      return expr;                             \
    }                                          \
  };
#define TS_UNARY_GRAD(name, expr)              \
  struct name {                                \
    static constexpr int kTypes = kFloatTypes; \
    template <typename A>                      \
    TS_XINLINE static A Map(A g, A v) {        \
      return expr;                             \
    }                                          \
  };

// --- arithmetic, defined on integers too ---

struct identity {
  static constexpr int kTypes = kAllTypes;
  template <typename A>
  TS_XINLINE static A Map(A x) {
    return x;
  }
};
struct logical_not {
  static constexpr int kTypes = kAllTypes;
  template <typename A>
  TS_XINLINE static A Map(A x) {
    return x == A(0) ? A(1) : A(0);
  }
};
struct abs {
  static constexpr int kTypes = kNumericTypes;
  template <typename A>
  TS_XINLINE static A Map(A x) {
    if constexpr (std::is_floating_point_v<A>)
      return math::fabs(x);
    else if constexpr (std::is_unsigned_v<A>)
      return x;
    else
      return x < A(0) ? A(-x) : x;
  }
};
struct sign {
  static constexpr int kTypes = kNumericTypes;
  template <typename A>
  TS_XINLINE static A Map(A x) {
    if constexpr (std::is_floating_point_v<A>) {
      if (math::isnan(x)) return x;
    }
    if constexpr (std::is_unsigned_v<A>)
      return x > A(0) ? A(1) : A(0);
    else
      return x > A(0) ? A(1) : (x < A(0) ? A(-1) : A(0));
  }
};
struct negative {
  static constexpr int kTypes = kNumericTypes;
  template <typename A>
  TS_XINLINE static A Map(A x) {
    return A(-x);
  }
};
struct square {
  static constexpr int kTypes = kNumericTypes;
  template <typename A>
  TS_XINLINE static A Map(A x) {
    return A(x * x);
  }
};
// NaN passes through relu and its gradient, as in MXNet's mshadow_op::relu
// and relu_grad (src/operator/mshadow_op.h): `x == x` is false for NaN only.
struct relu {
  static constexpr int kTypes = kNumericTypes;
  template <typename A>
  TS_XINLINE static A Map(A x) {
    return x > A(0) || !(x == x) ? x : A(0);
  }
};

// Rounding: integers are already whole.
#define TS_ROUNDING_UNARY(name, fn)              \
  struct name {                                  \
    static constexpr int kTypes = kNumericTypes; \
    template <typename A>                        \
    TS_XINLINE static A Map(A x) {               \
      if constexpr (std::is_floating_point_v<A>) \
        return math::fn(x);                      \
      else                                       \
        return x;                                \
    }                                            \
  };
TS_ROUNDING_UNARY(floor, floor)
TS_ROUNDING_UNARY(ceil, ceil)
TS_ROUNDING_UNARY(round, round)  // halves away from zero
TS_ROUNDING_UNARY(trunc, trunc)
TS_ROUNDING_UNARY(fix, trunc)  // toward zero, as numpy.fix
#undef TS_ROUNDING_UNARY
// The nearer of floor and ceil, floor on a tie (rint(1.5) = 1, rint(-1.5) =
// -2): MXNet's mshadow_op::rint (src/operator/mshadow_op.h), not C's rint,
// which rounds ties to even.
struct rint {
  static constexpr int kTypes = kNumericTypes;
  template <typename A>
  TS_XINLINE static A Map(A x) {
    if constexpr (std::is_floating_point_v<A>) {
      const A lo = math::floor(x), hi = math::ceil(x);
      return x - lo <= hi - x ? lo : hi;
    } else {
      return x;
    }
  }
};

// --- floating point only ---

TS_FLOAT_UNARY(reciprocal, A(1) / x)
TS_FLOAT_UNARY(sqrt, math::sqrt(x))
TS_FLOAT_UNARY(rsqrt, A(1) / math::sqrt(x))
TS_FLOAT_UNARY(cbrt, math::cbrt(x))
TS_FLOAT_UNARY(exp, math::exp(x))
TS_FLOAT_UNARY(expm1, math::expm1(x))
TS_FLOAT_UNARY(log, math::log(x))
TS_FLOAT_UNARY(log1p, math::log1p(x))
TS_FLOAT_UNARY(log2, math::log2(x))
TS_FLOAT_UNARY(log10, math::log10(x))
TS_FLOAT_UNARY(sin, math::sin(x))
TS_FLOAT_UNARY(cos, math::cos(x))
TS_FLOAT_UNARY(tan, math::tan(x))
TS_FLOAT_UNARY(arcsin, math::asin(x))
TS_FLOAT_UNARY(arccos, math::acos(x))
TS_FLOAT_UNARY(arctan, math::atan(x))
TS_FLOAT_UNARY(sinh, math::sinh(x))
TS_FLOAT_UNARY(cosh, math::cosh(x))
TS_FLOAT_UNARY(tanh, math::tanh(x))
TS_FLOAT_UNARY(arcsinh, math::asinh(x))
TS_FLOAT_UNARY(arccosh, math::acosh(x))
TS_FLOAT_UNARY(arctanh, math::atanh(x))
TS_FLOAT_UNARY(sigmoid, A(1) / (A(1) + math::exp(-x)))
TS_FLOAT_UNARY(softsign, x / (A(1) + math::fabs(x)))
TS_FLOAT_UNARY(erf, math::erf(x))
TS_FLOAT_UNARY(gamma, math::tgamma(x))
TS_FLOAT_UNARY(gammaln, math::lgamma(x))
TS_FLOAT_UNARY(erfinv, math::erfinv(x))
TS_FLOAT_UNARY(degrees, x* A(57.29577951308232087680))    // 180 / pi
TS_FLOAT_UNARY(radians, x* A(0.01745329251994329576924))  // pi / 180
// log(sigmoid(x)) = -log1p(e^-x), computed without overflow for large |x|.
struct log_sigmoid {
  static constexpr int kTypes = kFloatTypes;
  template <typename A>
  TS_XINLINE static A Map(A x) {
    if (x < A(0)) return A(x - A(math::log1p(math::exp(x))));
    return A(-A(math::log1p(math::exp(-x))));
  }
};
// softplus(x) = log1p(e^x); x itself where e^x would swamp the 1 (x > 20).
template <typename A>
TS_XINLINE A Softplus(A x) {
  return x > A(20) ? x : A(math::log1p(math::exp(x)));
}
// Mish: x tanh(softplus(x)).
struct mish {
  static constexpr int kTypes = kFloatTypes;
  template <typename A>
  TS_XINLINE static A Map(A x) {
    return A(x * A(math::tanh(Softplus(x))));
  }
};

// --- gradients: g times the derivative, from the input x or output y ---

struct abs_grad {  // UseIn
  static constexpr int kTypes = kNumericTypes;
  template <typename A>
  TS_XINLINE static A Map(A g, A x) {
    return A(g * sign::Map(x));
  }
};
struct square_grad {  // UseIn
  static constexpr int kTypes = kNumericTypes;
  template <typename A>
  TS_XINLINE static A Map(A g, A x) {
    return A(A(2) * x * g);
  }
};
struct relu_grad {  // UseOut; NaN where the output is NaN (see relu)
  static constexpr int kTypes = kNumericTypes;
  template <typename A>
  TS_XINLINE static A Map(A g, A y) {
    if (!(y == y)) return y;
    return y > A(0) ? g : A(0);
  }
};
TS_UNARY_GRAD(reciprocal_grad, -g / (v * v))                                         // UseIn
TS_UNARY_GRAD(sqrt_grad, g / (A(2) * v))                                             // UseOut
TS_UNARY_GRAD(rsqrt_grad, A(-0.5) * g / (v * math::sqrt(v)))                         // UseIn
TS_UNARY_GRAD(cbrt_grad, g / (A(3) * v * v))                                         // UseOut
TS_UNARY_GRAD(exp_grad, g* v)                                                        // UseOut
TS_UNARY_GRAD(expm1_grad, g* math::exp(v))                                           // UseIn
TS_UNARY_GRAD(log_grad, g / v)                                                       // UseIn
TS_UNARY_GRAD(log1p_grad, g / (A(1) + v))                                            // UseIn
TS_UNARY_GRAD(log2_grad, g / (v * A(0.693147180559945309417)))                       // UseIn
TS_UNARY_GRAD(log10_grad, g / (v * A(2.302585092994045684018)))                      // UseIn
TS_UNARY_GRAD(sin_grad, g* math::cos(v))                                             // UseIn
TS_UNARY_GRAD(cos_grad, -g* math::sin(v))                                            // UseIn
TS_UNARY_GRAD(tan_grad, g*(A(1) + v * v))                                            // UseOut
TS_UNARY_GRAD(arcsin_grad, g / math::sqrt(A(1) - v * v))                             // UseIn
TS_UNARY_GRAD(arccos_grad, -g / math::sqrt(A(1) - v * v))                            // UseIn
TS_UNARY_GRAD(arctan_grad, g / (A(1) + v * v))                                       // UseIn
TS_UNARY_GRAD(sinh_grad, g* math::cosh(v))                                           // UseIn
TS_UNARY_GRAD(cosh_grad, g* math::sinh(v))                                           // UseIn
TS_UNARY_GRAD(tanh_grad, g*(A(1) - v * v))                                           // UseOut
TS_UNARY_GRAD(arcsinh_grad, g / math::sqrt(v * v + A(1)))                            // UseIn
TS_UNARY_GRAD(arccosh_grad, g / math::sqrt(v * v - A(1)))                            // UseIn
TS_UNARY_GRAD(arctanh_grad, g / (A(1) - v * v))                                      // UseIn
TS_UNARY_GRAD(sigmoid_grad, g* v*(A(1) - v))                                         // UseOut
TS_UNARY_GRAD(softsign_grad, g / ((A(1) + math::fabs(v)) * (A(1) + math::fabs(v))))  // UseIn
TS_UNARY_GRAD(erf_grad, g* A(1.128379167095512573896) * math::exp(-v * v))           // UseIn
TS_UNARY_GRAD(gamma_grad, g* math::tgamma(v) * math::digamma(v))                     // UseIn
TS_UNARY_GRAD(gammaln_grad, g* math::digamma(v))                                     // UseIn
// d/dx erfinv(x) = sqrt(pi) / 2 * e^(y^2), from the output y.
TS_UNARY_GRAD(erfinv_grad, g* A(0.886226925452758013649) * math::exp(v * v))  // UseOut
// Constant derivatives: the forward input is passed and not needed.
#define TS_SCALED_GRAD(name, factor)           \
  struct name {                                \
    static constexpr int kTypes = kFloatTypes; \
    template <typename A>                      \
    TS_XINLINE static A Map(A g, A) {          \
      return A(g * A(factor));                 \
    }                                          \
  };
TS_SCALED_GRAD(degrees_grad, 57.29577951308232087680)    // 180 / pi
TS_SCALED_GRAD(radians_grad, 0.01745329251994329576924)  // pi / 180
#undef TS_SCALED_GRAD
// d/dx log(sigmoid(x)) = 1 - sigmoid(x) = 1 - e^y (MXNet's, from the output).
TS_UNARY_GRAD(log_sigmoid_grad, g*(A(1) - math::exp(v)))  // UseOut
// d/dx x tanh(sp(x)) = tanh(sp) + x (1 - tanh(sp)^2) sigmoid(x).
struct mish_grad {  // UseIn
  static constexpr int kTypes = kFloatTypes;
  template <typename A>
  TS_XINLINE static A Map(A g, A x) {
    const A t = A(math::tanh(Softplus(x)));
    const A sig = A(A(1) / (A(1) + math::exp(-x)));
    return A(g * (t + x * (A(1) - t * t) * sig));
  }
};

#undef TS_FLOAT_UNARY
#undef TS_UNARY_GRAD

}  // namespace unary

// The forward ops (name, functor) and the backward ops (name, gradient
// functor) that share the generic compute functions, for the .cc and .cu
// registrations.
// clang-format off
#define TS_ELEMWISE_UNARY_OPS(X)                                                                  \
  X(identity, identity)                                                                           \
  X(logical_not, logical_not)                                                                     \
  X(abs, abs) X(sign, sign) X(negative, negative) X(square, square) X(relu, relu) X(floor, floor) \
      X(ceil, ceil) X(round, round) X(rint, rint) X(trunc, trunc) X(fix, fix)                     \
          X(reciprocal, reciprocal) X(sqrt, sqrt) X(rsqrt, rsqrt) X(cbrt, cbrt) X(exp, exp)       \
              X(expm1, expm1) X(log, log) X(log1p, log1p) X(log2, log2) X(log10, log10)           \
                  X(sin, sin) X(cos, cos) X(tan, tan) X(arcsin, arcsin) X(arccos, arccos)         \
                      X(arctan, arctan) X(sinh, sinh) X(cosh, cosh) X(tanh, tanh)                 \
                          X(arcsinh, arcsinh) X(arccosh, arccosh) X(arctanh, arctanh)             \
                              X(sigmoid, sigmoid) X(softsign, softsign) X(erf, erf)               \
                                  X(gamma, gamma) X(gammaln, gammaln) X(erfinv, erfinv) X(degrees, degrees)     \
                                      X(radians, radians) X(log_sigmoid, log_sigmoid) X(mish, mish)

#define TS_ELEMWISE_UNARY_GRAD_OPS(X)                                                             \
  X(_backward_abs, abs_grad)                                                                      \
  X(_backward_square, square_grad)                                                                \
  X(_backward_relu, relu_grad)                                                                    \
  X(_backward_reciprocal, reciprocal_grad) X(_backward_sqrt, sqrt_grad) X(                        \
      _backward_rsqrt, rsqrt_grad) X(_backward_cbrt, cbrt_grad) X(_backward_exp, exp_grad)        \
      X(_backward_expm1, expm1_grad) X(_backward_log, log_grad) X(_backward_log1p, log1p_grad) X( \
          _backward_log2, log2_grad) X(_backward_log10, log10_grad) X(_backward_sin, sin_grad)    \
          X(_backward_cos, cos_grad) X(_backward_tan, tan_grad) X(_backward_arcsin, arcsin_grad)  \
              X(_backward_arccos, arccos_grad) X(_backward_arctan, arctan_grad)                   \
                  X(_backward_sinh, sinh_grad) X(_backward_cosh, cosh_grad)                       \
                      X(_backward_tanh, tanh_grad) X(_backward_arcsinh, arcsinh_grad)             \
                          X(_backward_arccosh, arccosh_grad) X(_backward_arctanh, arctanh_grad)   \
                              X(_backward_sigmoid, sigmoid_grad)                                  \
                                  X(_backward_softsign, softsign_grad) X(_backward_erf, erf_grad) \
                                      X(_backward_gamma, gamma_grad)                              \
                                          X(_backward_gammaln, gammaln_grad) X(_backward_erfinv, erfinv_grad) \
                                              X(_backward_degrees, degrees_grad)          \
                                                  X(_backward_radians, radians_grad)      \
                                                      X(_backward_log_sigmoid, log_sigmoid_grad) \
                                                          X(_backward_mish, mish_grad)
// clang-format on

// --- clip ---

struct ClipParam : Params<ClipParam> {
  double a_min = 0, a_max = 0;
  static void Declare(ParamDecl<ClipParam>& d) {
    d.field("a_min", &ClipParam::a_min).describe("Lower bound: smaller values become a_min.");
    d.field("a_max", &ClipParam::a_max).describe("Upper bound: larger values become a_max.");
  }
};

// Parses and checks a_min <= a_max (else every element's result is ambiguous).
void ParseClipParam(NodeAttrs* attrs);

struct clip_fn {
  template <typename A>
  TS_XINLINE static A Map(A x, A lo, A hi) {
    return x < lo ? lo : (x > hi ? hi : x);
  }
};
// The gradient passes where the input lies inside [a_min, a_max] (bounds
// included, as PyTorch's clamp).
struct clip_grad {
  template <typename A>
  TS_XINLINE static A Map(A g, A x, A lo, A hi) {
    return (x >= lo && x <= hi) ? g : A(0);
  }
};

// --- hard_sigmoid ---

struct HardSigmoidParam : Params<HardSigmoidParam> {
  double alpha = 0.2, beta = 0.5;
  static void Declare(ParamDecl<HardSigmoidParam>& d) {
    d.field("alpha", &HardSigmoidParam::alpha).set_default(0.2).describe("The slope.");
    d.field("beta", &HardSigmoidParam::beta).set_default(0.5).describe("The intercept.");
  }
};

// max(0, min(1, alpha x + beta)), MXNet's mshadow_op::hard_sigmoid.
struct hard_sigmoid_fn {
  template <typename A>
  TS_XINLINE static A Map(A x, A alpha, A beta) {
    const A y = A(alpha * x + beta);
    return y < A(0) ? A(0) : (y > A(1) ? A(1) : y);
  }
};
// alpha where 0 < alpha x + beta < 1, else 0 (MXNet's, there from the output).
struct hard_sigmoid_grad {
  template <typename A>
  TS_XINLINE static A Map(A g, A x, A alpha, A beta) {
    const A y = A(alpha * x + beta);
    return (y > A(0) && y < A(1)) ? A(g * alpha) : A(0);
  }
};

// --- kernels ---

// OP(in[i], p...) in the accumulation type.
template <typename OP>
struct unary_value {
  template <typename T, typename... P>
  TS_XINLINE static auto Value(int64_t i, const T* in, P... p) {
    return OP::Map(static_cast<AccType<T>>(in[i]), p...);
  }
};

// OP(g[i], v[i], p...): the gradient from the output gradient and one value.
template <typename OP>
struct unary_grad_value {
  template <typename T, typename... P>
  TS_XINLINE static auto Value(int64_t i, const T* g, const T* v, P... p) {
    return OP::Map(static_cast<AccType<T>>(g[i]), static_cast<AccType<T>>(v[i]), p...);
  }
};

// out = OP(in, p...) for every element; p are AccType<T> parameters.
template <typename xpu, typename OP, typename T, typename... P>
void UnaryLaunch(const OpContext& ctx, OpReqType req, const TBlob& out, const TBlob& in, P... p) {
  SameShapeMap<xpu, unary_value<OP>>(ctx.run_ctx, req, out.dptr<T>(), out.Size(), in.dptr<T>(),
                                     p...);
}

template <typename xpu, typename OP, typename T, typename... P>
void UnaryGradLaunch(const OpContext& ctx, OpReqType req, const TBlob& out, const TBlob& g,
                     const TBlob& v, P... p) {
  SameShapeMap<xpu, unary_grad_value<OP>>(ctx.run_ctx, req, out.dptr<T>(), out.Size(), g.dptr<T>(),
                                          v.dptr<T>(), p...);
}

// The dtype switch every unary op's FCompute shares: out = OP(in, p...), or
// with kGrad out = OP(ograd, in[1], p...), the parameters p cast to the
// accumulation type of the dtype.
template <typename xpu, typename OP, int kTypes, bool kGrad, typename... P>
void UnaryDTypeCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReqType>& req, const std::vector<TBlob>& out, P... p) {
  SwitchElemwiseDType<kTypes>(
      out[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (kGrad) {
          UnaryGradLaunch<xpu, OP, T>(ctx, req[0], out[0], in[0], in[1],
                                      static_cast<AccType<T>>(p)...);
        } else {
          UnaryLaunch<xpu, OP, T>(ctx, req[0], out[0], in[0], static_cast<AccType<T>>(p)...);
        }
      },
      attrs.op->name().c_str());
}

template <typename xpu, typename OP>
void UnaryCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  UnaryDTypeCompute<xpu, OP, OP::kTypes, false>(attrs, ctx, in, req, out);
}

// Inputs: the output gradient, then the forward input or output.
template <typename xpu, typename OP>
void UnaryGradCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  UnaryDTypeCompute<xpu, OP, OP::kTypes, true>(attrs, ctx, in, req, out);
}

// Unary ops whose functor takes two parameters of the op (clip's bounds,
// hard_sigmoid's slope and intercept), forward and (kGrad; inputs: the
// output gradient, then the forward input) backward.
template <typename xpu, typename OP, int kTypes, bool kGrad, typename Param, double Param::*kA,
          double Param::*kB>
void TwoParamUnaryCompute(const NodeAttrs& attrs, const OpContext& ctx,
                          const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                          const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<Param>(attrs);
  UnaryDTypeCompute<xpu, OP, kTypes, kGrad>(attrs, ctx, in, req, out, p.*kA, p.*kB);
}

template <typename xpu>
constexpr auto ClipCompute = TwoParamUnaryCompute<xpu, clip_fn, kNumericTypes, false, ClipParam,
                                                  &ClipParam::a_min, &ClipParam::a_max>;
template <typename xpu>
constexpr auto ClipGradCompute =
    TwoParamUnaryCompute<xpu, clip_grad, kNumericTypes, true, ClipParam, &ClipParam::a_min,
                         &ClipParam::a_max>;
template <typename xpu>
constexpr auto HardSigmoidCompute =
    TwoParamUnaryCompute<xpu, hard_sigmoid_fn, kFloatTypes, false, HardSigmoidParam,
                         &HardSigmoidParam::alpha, &HardSigmoidParam::beta>;
template <typename xpu>
constexpr auto HardSigmoidGradCompute =
    TwoParamUnaryCompute<xpu, hard_sigmoid_grad, kFloatTypes, true, HardSigmoidParam,
                         &HardSigmoidParam::alpha, &HardSigmoidParam::beta>;

}  // namespace tessera::op
