// Activation and LeakyReLU on the GPU: the functors of activation-inl.h
// through Kernel<..., gpu>, on the op's stream. rrelu draws each element's
// slope from the op's Philox stream as the CPU does (four per block), so a
// seed gives the same slopes on either device.
#include "engine/op/kernel_launch_cuda.cuh"
#include "engine/resource/random_stream.h"
#include "ops/nn/activation-inl.h"

namespace tessera::op {
namespace {

void ActForwardGpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  act::SwitchAct(ParamsOf<ActivationParam>(attrs).act_type, [&](auto f) {
    using F = decltype(f);
    SwitchFloatDType(
        out[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          SwitchReq(req[0], [&](auto r) {
            Kernel<act::forward<r.value, F>, gpu>::Launch(ctx.run_ctx, out[0].Size(),
                                                          out[0].dptr<T>(), in[0].dptr<T>());
          });
        },
        "Activation");
  });
}

// Inputs: ograd, out[, data for softsign].
void ActBackwardGpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  act::SwitchAct(ParamsOf<ActivationParam>(attrs).act_type, [&](auto f) {
    using F = decltype(f);
    SwitchFloatDType(
        out[0].dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* y = in[1].dptr<T>();
          const T* x = in.size() > 2 ? in[2].dptr<T>() : y;
          SwitchReq(req[0], [&](auto r) {
            Kernel<act::backward<r.value, F>, gpu>::Launch(ctx.run_ctx, out[0].Size(),
                                                           out[0].dptr<T>(), in[0].dptr<T>(), y, x);
          });
        },
        "_backward_Activation");
  });
}

// rrelu: elements 4b .. 4b + 3 take the slopes of Philox block b (training),
// or the bounds' mean; mask keeps them for the backward.
struct RreluKernel {
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

template <int req>
struct RreluBackward {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* gin, const T* g, const T* x, const T* mask) {
    using A = AccType<T>;
    AssignReq<req>(gin[i], static_cast<A>(g[i]) *
                               (static_cast<A>(x[i]) > A(0) ? A(1) : static_cast<A>(mask[i])));
  }
};

// gamma_grad[c] (+)= sum of g * (x > 0 ? 0 : x) over channel c, in the CPU's order.
struct PreluGammaGrad {
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

void LeakyForwardGpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
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
          Kernel<RreluKernel, gpu>::Launch(ctx.run_ctx, (n + 3) / 4, out[0].dptr<T>(),
                                           out[1].dptr<T>(), in[0].dptr<T>(), n, s, ctx.is_train,
                                           p.lower_bound, p.upper_bound, req[0]);
          return;
        }
        SwitchReq(req[0], [&](auto r) {
          if (p.act_type == kLeakyPrelu) {
            const PreluGeom g = MakePreluGeom(in[0].shape(), in[1].shape());
            Kernel<act::prelu_forward<r.value>, gpu>::Launch(ctx.run_ctx, n, out[0].dptr<T>(),
                                                             in[0].dptr<T>(), in[1].dptr<T>(),
                                                             g.inner, g.channels);
            return;
          }
          act::SwitchLeaky(p.act_type, [&](auto f) {
            Kernel<act::leaky_forward<r.value, decltype(f)>, gpu>::Launch(
                ctx.run_ctx, n, out[0].dptr<T>(), in[0].dptr<T>(), p.slope);
          });
        });
      },
      "LeakyReLU");
}

// Inputs: ograd, data[, gamma | mask]. Outputs: data gradient[, gamma gradient].
void LeakyBackwardGpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
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
            Kernel<act::prelu_backward_data<r.value>, gpu>::Launch(
                ctx.run_ctx, n, out[0].dptr<T>(), in[0].dptr<T>(), in[1].dptr<T>(), in[2].dptr<T>(),
                g.inner, g.channels);
          });
          if (req[1] != kNullOp)
            Kernel<PreluGammaGrad, gpu>::Launch(ctx.run_ctx, g.channels, g, in[0].dptr<T>(),
                                                in[1].dptr<T>(), out[1].dptr<T>(),
                                                req[1] == kAddTo);
          return;
        }
        SwitchReq(req[0], [&](auto r) {
          if (p.act_type == kLeakyRrelu) {
            Kernel<RreluBackward<r.value>, gpu>::Launch(ctx.run_ctx, n, out[0].dptr<T>(),
                                                        in[0].dptr<T>(), in[1].dptr<T>(),
                                                        in[2].dptr<T>());
            return;
          }
          act::SwitchLeaky(p.act_type, [&](auto f) {
            Kernel<act::leaky_backward<r.value, decltype(f)>, gpu>::Launch(
                ctx.run_ctx, n, out[0].dptr<T>(), in[0].dptr<T>(), in[1].dptr<T>(), p.slope);
          });
        });
      },
      "_backward_LeakyReLU");
}

}  // namespace

TS_REGISTER_OP(LeakyReLU).set_attr<FCompute>(kFComputeGPU, LeakyForwardGpu);
TS_REGISTER_OP(_backward_LeakyReLU).set_attr<FCompute>(kFComputeGPU, LeakyBackwardGpu);
TS_REGISTER_OP(Activation).set_attr<FCompute>(kFComputeGPU, ActForwardGpu);
TS_REGISTER_OP(_backward_Activation).set_attr<FCompute>(kFComputeGPU, ActBackwardGpu);

}  // namespace tessera::op
