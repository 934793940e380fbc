// Activation and LeakyReLU: parameters and element functors, shared by the
// CPU registration (activation.cc) and a future GPU one.
#pragma once

#include <vector>

#include "ops/nn/nn_common.h"
#include "ops/tensor/elemwise_common.h"
#include "ops/tensor/elemwise_math.h"

namespace tessera::op {

enum ActType { kActRelu, kActSigmoid, kActTanh, kActSoftRelu, kActSoftSign };

struct ActivationParam : Params<ActivationParam> {
  int act_type = kActRelu;
  static void Declare(ParamDecl<ActivationParam>& d) {
    d.field("act_type", &ActivationParam::act_type)
        .add_enum("relu", kActRelu)
        .add_enum("sigmoid", kActSigmoid)
        .add_enum("tanh", kActTanh)
        .add_enum("softrelu", kActSoftRelu)
        .add_enum("softsign", kActSoftSign)
        .describe(
            "The activation: relu max(x, 0), sigmoid 1/(1+exp(-x)), tanh, softrelu "
            "log(1+exp(x)), softsign x/(1+|x|).");
  }
};

enum LeakyType { kLeakyElu, kLeakyGelu, kLeakyLeaky, kLeakyPrelu, kLeakyRrelu, kLeakySelu };

struct LeakyReLUParam : Params<LeakyReLUParam> {
  int act_type = kLeakyLeaky;
  float slope = 0.25f, lower_bound = 0.125f, upper_bound = 0.334f;
  static void Declare(ParamDecl<LeakyReLUParam>& d) {
    d.field("act_type", &LeakyReLUParam::act_type)
        .set_default(kLeakyLeaky)
        .add_enum("elu", kLeakyElu)
        .add_enum("gelu", kLeakyGelu)
        .add_enum("leaky", kLeakyLeaky)
        .add_enum("prelu", kLeakyPrelu)
        .add_enum("rrelu", kLeakyRrelu)
        .add_enum("selu", kLeakySelu)
        .describe(
            "The activation: leaky x>0 ? x : slope*x; prelu the same with a learned gamma "
            "input as slope; elu x>0 ? x : slope*(exp(x)-1); selu the scaled elu of "
            "Klambauer et al.; gelu 0.5*x*(1+erf(x/sqrt(2))); rrelu x>0 ? x : a*x with a "
            "drawn per element from U(lower_bound, upper_bound) in training, their mean "
            "otherwise.");
    d.field("slope", &LeakyReLUParam::slope)
        .set_default(0.25f)
        .describe("Slope of the negative part for leaky, and the scale of elu.");
    d.field("lower_bound", &LeakyReLUParam::lower_bound)
        .set_default(0.125f)
        .describe("Lower bound of rrelu's random slope.");
    d.field("upper_bound", &LeakyReLUParam::upper_bound)
        .set_default(0.334f)
        .describe("Upper bound of rrelu's random slope.");
  }
};

// prelu's gamma runs along axis 1 (axis 0 of 1-D data): (inner, channels).
struct PreluGeom {
  int64_t outer = 1, channels = 1, inner = 1;
};

inline PreluGeom MakePreluGeom(const Shape& data, const Shape& gamma) {
  const int axis = data.ndim() >= 2 ? 1 : 0;
  PreluGeom g;
  g.outer = data.ProdRange(0, axis);
  g.inner = data.ProdRange(axis + 1, data.ndim());
  g.channels = gamma.Size() == 1 ? 1 : data[axis];
  if (g.channels == 1) {  // one slope: one channel covering everything
    g.outer = 1;
    g.inner = data.Size();
  }
  return g;
}

namespace act {

// Forward f(x) and the derivative from the output y and/or input x; computed
// in A = AccType<T>.
// x > 0 ? v : 0 and x > 0 ? 0 : v: selects against zero vectorise as masks on
// every x86-64 (a general select needs SSE4.1's blend, else it branches, and
// the branch mispredicts on every other element of signed data).
template <typename A>
TS_XINLINE A IfPos(A x, A v) {
  return x > A(0) ? v : A(0);
}
template <typename A>
TS_XINLINE A IfNotPos(A x, A v) {
  return x > A(0) ? A(0) : v;
}

// Map(x): the value; Backward(g, y, x): the input gradient from the output
// gradient g, the output y and the input x (x is read by softsign only).
// NaN passes through, forward and backward, as in MXNet's mshadow_op::relu
// and relu_grad (src/operator/mshadow_op.h) and the relu operator.
struct relu {
  template <typename A>
  TS_XINLINE static A Map(A x) {
    return x > A(0) || !(x == x) ? x : A(0);
  }
  template <typename A>
  TS_XINLINE static A Backward(A g, A y, A) {
    return y == y ? IfPos(y, g) : y;
  }
};
struct sigmoid {
  template <typename A>
  TS_XINLINE static A Map(A x) {
    return A(1) / (A(1) + math::exp(-x));
  }
  template <typename A>
  TS_XINLINE static A Backward(A g, A y, A) {
    return g * y * (A(1) - y);
  }
};
struct tanh {
  template <typename A>
  TS_XINLINE static A Map(A x) {
    return math::tanh(x);
  }
  template <typename A>
  TS_XINLINE static A Backward(A g, A y, A) {
    return g * (A(1) - y * y);
  }
};
struct softrelu {  // log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)), stable for large |x|
  template <typename A>
  TS_XINLINE static A Map(A x) {
    return IfPos(x, x) + math::log1p(math::exp(-math::fabs(x)));
  }
  template <typename A>
  TS_XINLINE static A Backward(A g, A y, A) {  // sigmoid(x) = 1 - exp(-y)
    return -g * math::expm1(-y);
  }
};
struct softsign {
  template <typename A>
  TS_XINLINE static A Map(A x) {
    return x / (A(1) + math::fabs(x));
  }
  template <typename A>
  TS_XINLINE static A Backward(A g, A, A x) {
    const A d = A(1) + math::fabs(x);
    return g / (d * d);
  }
};

template <int req, typename F>
struct forward {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, const T* in) {
    AssignReq<req>(out[i], F::Map(static_cast<AccType<T>>(in[i])));
  }
};

// in_grad = g * f'(y, x); x may be null for the functors that read only y.
template <int req, typename F>
struct backward {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* in_grad, const T* g, const T* y, const T* x) {
    using A = AccType<T>;
    AssignReq<req>(in_grad[i], F::Backward(static_cast<A>(g[i]), static_cast<A>(y[i]),
                                           x ? static_cast<A>(x[i]) : A(0)));
  }
};

// Calls fn(functor tag) for the activation type.
template <typename Fn>
void SwitchAct(int type, Fn&& fn) {
  switch (type) {
    case kActRelu:
      return fn(relu{});
    case kActSigmoid:
      return fn(sigmoid{});
    case kActTanh:
      return fn(tanh{});
    case kActSoftRelu:
      return fn(softrelu{});
    case kActSoftSign:
      return fn(softsign{});
  }
  TS_THROW << "Activation: unknown act_type " << type;
}

// ---- LeakyReLU (not prelu): value and derivative from x.
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluLambda = 1.0507009873554804934193349852946;
constexpr double kSqrt2 = 1.4142135623730950488016887242097;
constexpr double kTwoOverSqrtPi = 1.1283791670955125738961589031215;

struct leaky {
  template <typename A>
  TS_XINLINE static A Map(A x, A slope) {
    return IfPos(x, x) + slope * IfNotPos(x, x);
  }
  template <typename A>
  TS_XINLINE static A Backward(A g, A x, A slope) {
    return IfPos(x, g) + slope * IfNotPos(x, g);
  }
};
struct elu {
  template <typename A>
  TS_XINLINE static A Map(A x, A slope) {
    return IfPos(x, x) + IfNotPos(x, slope * math::expm1(x));
  }
  template <typename A>
  TS_XINLINE static A Backward(A g, A x, A slope) {
    return IfPos(x, g) + IfNotPos(x, g * slope * math::exp(x));
  }
};
struct selu {
  template <typename A>
  TS_XINLINE static A Map(A x, A) {
    return A(kSeluLambda) * (IfPos(x, x) + IfNotPos(x, A(kSeluAlpha) * math::expm1(x)));
  }
  template <typename A>
  TS_XINLINE static A Backward(A g, A x, A) {
    return A(kSeluLambda) * (IfPos(x, g) + IfNotPos(x, g * A(kSeluAlpha) * math::exp(x)));
  }
};
struct gelu {
  template <typename A>
  TS_XINLINE static A Map(A x, A) {
    return A(0.5) * x * (A(1) + math::erf(x / A(kSqrt2)));
  }
  template <typename A>
  TS_XINLINE static A Backward(A g, A x, A) {
    const A u = x / A(kSqrt2);
    return g * (A(0.5) * (A(1) + math::erf(u)) +
                x * A(0.5 * kTwoOverSqrtPi / kSqrt2) * math::exp(-u * u));
  }
};

template <int req, typename F>
struct leaky_forward {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, const T* in, float slope) {
    using A = AccType<T>;
    AssignReq<req>(out[i], F::Map(static_cast<A>(in[i]), static_cast<A>(slope)));
  }
};
template <int req, typename F>
struct leaky_backward {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* in_grad, const T* g, const T* x, float slope) {
    using A = AccType<T>;
    AssignReq<req>(in_grad[i],
                   F::Backward(static_cast<A>(g[i]), static_cast<A>(x[i]), static_cast<A>(slope)));
  }
};

// prelu: gamma indexed by the channel (i / inner) % channels; channels 1
// broadcasts one slope.
template <int req>
struct prelu_forward {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, const T* in, const T* gamma, int64_t inner,
                             int64_t channels) {
    using A = AccType<T>;
    const A x = static_cast<A>(in[i]);
    const A s = static_cast<A>(gamma[(i / inner) % channels]);
    AssignReq<req>(out[i], IfPos(x, x) + s * IfNotPos(x, x));
  }
};
template <int req>
struct prelu_backward_data {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* in_grad, const T* g, const T* in, const T* gamma,
                             int64_t inner, int64_t channels) {
    using A = AccType<T>;
    const A x = static_cast<A>(in[i]);
    const A s = static_cast<A>(gamma[(i / inner) % channels]);
    const A gv = static_cast<A>(g[i]);
    AssignReq<req>(in_grad[i], IfPos(x, gv) + s * IfNotPos(x, gv));
  }
};

template <typename Fn>
void SwitchLeaky(int type, Fn&& fn) {
  switch (type) {
    case kLeakyLeaky:
      return fn(leaky{});
    case kLeakyElu:
      return fn(elu{});
    case kLeakySelu:
      return fn(selu{});
    case kLeakyGelu:
      return fn(gelu{});
  }
  TS_THROW << "LeakyReLU: act_type " << type << " has no elementwise kernel";
}

}  // namespace act
}  // namespace tessera::op
