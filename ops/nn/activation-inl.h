// Activation and LeakyReLU: parameters, element functors and the computes,
// shared by the CPU registration (activation.cc) and the GPU's (activation.cu).
#pragma once

#include <algorithm>
#include <type_traits>
#include <vector>

#include "engine/resource/random_stream.h"
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

template <typename F>
struct forward {
  template <typename T>
  TS_XINLINE static AccType<T> Value(int64_t i, const T* in) {
    return F::Map(static_cast<AccType<T>>(in[i]));
  }
};

// g * f'(y, x); x is y for the functors that read only y.
template <typename F>
struct backward {
  template <typename T>
  TS_XINLINE static AccType<T> Value(int64_t i, const T* g, const T* y, const T* x) {
    using A = AccType<T>;
    return F::Backward(static_cast<A>(g[i]), static_cast<A>(y[i]), static_cast<A>(x[i]));
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

// Calls fn(functor tag, dtype tag) for the op's act_type and the float dtype t.
template <typename Fn>
void SwitchActFloat(const NodeAttrs& attrs, DType t, const char* who, Fn&& fn) {
  SwitchAct(ParamsOf<ActivationParam>(attrs).act_type, [&](auto f) {
    SwitchFloatDType(
        t, [&](auto tag) { fn(f, tag); }, who);
  });
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

template <typename F>
struct leaky_forward {
  template <typename T>
  TS_XINLINE static AccType<T> Value(int64_t i, const T* in, AccType<T> slope) {
    return F::Map(static_cast<AccType<T>>(in[i]), slope);
  }
};
template <typename F>
struct leaky_backward {
  template <typename T>
  TS_XINLINE static AccType<T> Value(int64_t i, const T* g, const T* x, AccType<T> slope) {
    using A = AccType<T>;
    return F::Backward(static_cast<A>(g[i]), static_cast<A>(x[i]), slope);
  }
};

// rrelu: elements 4b .. 4b + 3 take the slopes of Philox block b (training,
// as random_stream.h lays them out), or the bounds' mean; mask keeps them for
// the backward. Either device draws the same slopes from a seed.
struct rrelu_forward {
  template <typename T>
  TS_XINLINE static void Map(int64_t b, T* y, T* mask, const T* x, int64_t n,
                             resource::RandomStream s, bool train, float lo, float hi,
                             OpReqType req) {
    using A = AccType<T>;
    const resource::PhiloxCounter r =
        train ? resource::RandomBlock(s, static_cast<uint64_t>(b)) : resource::PhiloxCounter{};
    for (int64_t i = 4 * b; i < 4 * b + 4 && i < n; ++i) {
      const float a = train ? lo + (hi - lo) * resource::UnitFloat(r.v[i - 4 * b]) : (lo + hi) / 2;
      mask[i] = static_cast<T>(a);
      const A xv = static_cast<A>(x[i]), v = xv > A(0) ? xv : static_cast<A>(a) * xv;
      if (req == kAddTo)
        y[i] = static_cast<T>(static_cast<A>(y[i]) + v);
      else if (req != kNullOp)
        y[i] = static_cast<T>(v);
    }
  }
};

// g * (x > 0 ? 1 : the slope drawn for the element).
struct rrelu_backward {
  template <typename T>
  TS_XINLINE static AccType<T> Value(int64_t i, const T* g, const T* x, const T* mask) {
    using A = AccType<T>;
    return static_cast<A>(g[i]) * (static_cast<A>(x[i]) > A(0) ? A(1) : static_cast<A>(mask[i]));
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

// gamma_grad[c] (+)= sum of g * (x > 0 ? 0 : x) over channel c, one channel a
// thread, in the same order on either device.
struct prelu_gamma_grad {
  template <typename T>
  TS_XINLINE static void Map(int64_t c, PreluGeom geom, const T* g, const T* x, T* out,
                             bool accumulate) {
    using A = AccType<T>;
    A acc = A(0);
    for (int64_t o = 0; o < geom.outer; ++o) {
      const int64_t base = (o * geom.channels + c) * geom.inner;
      for (int64_t k = 0; k < geom.inner; ++k) {
        const A xv = static_cast<A>(x[base + k]);
        if (!(xv > A(0))) acc += static_cast<A>(g[base + k]) * xv;
      }
    }
    out[c] = static_cast<T>(accumulate ? static_cast<A>(out[c]) + acc : acc);
  }
};

template <typename xpu, typename T>
void PreluGammaGrad(const RunContext& rctx, const PreluGeom& geom, const T* g, const T* x, T* out,
                    bool accumulate) {
  if constexpr (std::is_same_v<xpu, cpu>) {
    // Threads by the whole tensor's work, but never more than the channels.
    const int64_t total = geom.outer * geom.channels * geom.inner;
    [[maybe_unused]] const int threads =
        static_cast<int>(std::min<int64_t>(CpuThreads(rctx, total), geom.channels));
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#endif
    for (int64_t c = 0; c < geom.channels; ++c)
      prelu_gamma_grad::Map(c, geom, g, x, out, accumulate);
  } else {
    Kernel<prelu_gamma_grad, xpu>::Launch(rctx, geom.channels, geom, g, x, out, accumulate);
  }
}

}  // namespace act

// The computes, one body for either device (xpu cpu or gpu).

template <typename xpu>
void ActForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  act::SwitchActFloat(attrs, out[0].dtype(), "Activation", [&](auto f, auto tag) {
    using T = typename decltype(tag)::type;
    SameShapeMap<xpu, act::forward<decltype(f)>>(ctx.run_ctx, req[0], out[0].dptr<T>(),
                                                 out[0].Size(), in[0].dptr<T>());
  });
}

// Inputs: ograd, out[, data for softsign].
template <typename xpu>
void ActBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  act::SwitchActFloat(attrs, out[0].dtype(), "_backward_Activation", [&](auto f, auto tag) {
    using T = typename decltype(tag)::type;
    const T* y = in[1].dptr<T>();
    const T* x = in.size() > 2 ? in[2].dptr<T>() : y;
    SameShapeMap<xpu, act::backward<decltype(f)>>(ctx.run_ctx, req[0], out[0].dptr<T>(),
                                                  out[0].Size(), in[0].dptr<T>(), y, x);
  });
}

template <typename xpu>
void LeakyForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<LeakyReLUParam>(attrs);
  const int64_t n = out[0].Size();
  SwitchFloatDType(
      out[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (p.act_type == kLeakyRrelu) {
          const resource::RandomStream s =
              ctx.is_train ? ctx.requested.at(0).get_random() : resource::RandomStream{};
          Kernel<act::rrelu_forward, xpu>::Launch(
              ctx.run_ctx, (n + 3) / 4, out[0].dptr<T>(), out[1].dptr<T>(), in[0].dptr<T>(), n, s,
              ctx.is_train, p.lower_bound, p.upper_bound, req[0]);
          return;
        }
        if (p.act_type == kLeakyPrelu) {
          const PreluGeom g = MakePreluGeom(in[0].shape(), in[1].shape());
          SwitchReq(req[0], [&](auto r) {
            Kernel<act::prelu_forward<r.value>, xpu>::Launch(ctx.run_ctx, n, out[0].dptr<T>(),
                                                             in[0].dptr<T>(), in[1].dptr<T>(),
                                                             g.inner, g.channels);
          });
          return;
        }
        act::SwitchLeaky(p.act_type, [&](auto f) {
          SameShapeMap<xpu, act::leaky_forward<decltype(f)>>(ctx.run_ctx, req[0], out[0].dptr<T>(),
                                                             n, in[0].dptr<T>(),
                                                             static_cast<AccType<T>>(p.slope));
        });
      },
      "LeakyReLU");
}

// Inputs: ograd, data[, gamma | mask]. Outputs: data gradient[, gamma gradient].
template <typename xpu>
void LeakyBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<LeakyReLUParam>(attrs);
  const int64_t n = in[1].Size();
  SwitchFloatDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (p.act_type == kLeakyPrelu) {
          const PreluGeom g = MakePreluGeom(in[1].shape(), in[2].shape());
          SwitchReq(req[0], [&](auto r) {
            Kernel<act::prelu_backward_data<r.value>, xpu>::Launch(
                ctx.run_ctx, n, out[0].dptr<T>(), in[0].dptr<T>(), in[1].dptr<T>(), in[2].dptr<T>(),
                g.inner, g.channels);
          });
          if (req[1] != kNullOp)
            act::PreluGammaGrad<xpu>(ctx.run_ctx, g, in[0].dptr<T>(), in[1].dptr<T>(),
                                     out[1].dptr<T>(), req[1] == kAddTo);
          return;
        }
        if (p.act_type == kLeakyRrelu) {
          SameShapeMap<xpu, act::rrelu_backward>(ctx.run_ctx, req[0], out[0].dptr<T>(), n,
                                                 in[0].dptr<T>(), in[1].dptr<T>(), in[2].dptr<T>());
          return;
        }
        act::SwitchLeaky(p.act_type, [&](auto f) {
          SameShapeMap<xpu, act::leaky_backward<decltype(f)>>(ctx.run_ctx, req[0], out[0].dptr<T>(),
                                                              n, in[0].dptr<T>(), in[1].dptr<T>(),
                                                              static_cast<AccType<T>>(p.slope));
        });
      },
      "_backward_LeakyReLU");
}

}  // namespace tessera::op
