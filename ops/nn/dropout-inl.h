// Dropout's parameters, element kernels and computation, shared by the CPU
// (dropout.cc) and GPU (dropout.cu) registrations: the same Philox draws
// per element on both, so a seed gives the same mask on either device.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/resource/random_stream.h"
#include "ops/nn/nn_common.h"

namespace tessera::op {

enum DropoutMode { kDropoutTraining, kDropoutAlways };

struct DropoutParam : Params<DropoutParam> {
  float p = 0.5f;
  int mode = kDropoutTraining;
  std::vector<int64_t> axes;
  std::optional<bool> cudnn_off;
  static void Declare(ParamDecl<DropoutParam>& d) {
    d.field("p", &DropoutParam::p)
        .set_default(0.5f)
        .set_range(0.f, 1.f)
        .describe("Fraction of the input that gets dropped out during training.");
    d.field("mode", &DropoutParam::mode)
        .set_default(kDropoutTraining)
        .add_enum("training", kDropoutTraining)
        .add_enum("always", kDropoutAlways)
        .describe(
            "'training': drop only in training mode (is_train / autograd.record); 'always': in "
            "inference too.");
    d.field("axes", &DropoutParam::axes)
        .set_default(std::vector<int64_t>{})
        .set_axis()
        .describe(
            "Axes along which one mask value is shared (variational dropout): the mask is "
            "drawn with these axes of size 1 and broadcast. Empty: every element drawn.");
    d.field("cudnn_off", &DropoutParam::cudnn_off)
        .set_default(false)
        .describe("Accepted for MXNet compatibility; no effect on CPU.");
  }
};

inline const DropoutParam& DropParams(const NodeAttrs& attrs) {
  return ParamsOf<DropoutParam>(attrs);
}

// Four elements per Philox block: element i keeps when its uniform draw is
// below pkeep.
template <int req>
struct dropout_block {
  template <typename T>
  TS_XINLINE static void Map(int64_t b, T* out, T* mask, const T* in, int64_t n,
                             resource::RandomStream s, float pkeep, double scale) {
    using A = AccType<T>;
    const resource::PhiloxCounter r = resource::RandomBlock(s, static_cast<uint64_t>(b));
    for (int lane = 0; lane < 4; ++lane) {
      const int64_t i = 4 * b + lane;
      if (i >= n) break;
      // Arithmetic, not a branch: a kept/dropped branch mispredicts half the time.
      const A m = static_cast<A>(resource::UnitFloat(r.v[lane]) < pkeep) * A(scale);
      mask[i] = static_cast<T>(m);
      AssignReq<req>(out[i], static_cast<A>(in[i]) * m);
    }
  }
};

// With shared axes: element i draws at its index in the reduced shape.
template <int req>
struct dropout_axes {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, T* mask, const T* in, Shape dims, Shape rstride,
                             resource::RandomStream s, float pkeep, double scale) {
    using A = AccType<T>;
    int64_t rest = i, j = 0;
    for (int d = dims.ndim() - 1; d >= 0; --d) {
      j += (rest % dims[d]) * rstride[d];
      rest /= dims[d];
    }
    const A m = static_cast<A>(resource::RandomUniformFloat(s, static_cast<uint64_t>(j)) < pkeep) *
                A(scale);
    mask[i] = static_cast<T>(m);
    AssignReq<req>(out[i], static_cast<A>(in[i]) * m);
  }
};

template <int req>
struct dropout_identity {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out, T* mask, const T* in) {
    if (mask) mask[i] = T(1);
    AssignReq<req>(out[i], in[i]);
  }
};

template <int req>
struct dropout_backward {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* in_grad, const T* g, const T* mask) {
    using A = AccType<T>;
    AssignReq<req>(in_grad[i], static_cast<A>(g[i]) * static_cast<A>(mask[i]));
  }
};

template <typename xpu>
void DropoutForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = DropParams(attrs);
  const int64_t n = in[0].Size();
  const bool apply = (ctx.is_train || p.mode == kDropoutAlways) && p.p > 0;
  SwitchFloatDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* y = out[0].dptr<T>();
        T* mask = out[1].dptr<T>();
        const T* x = in[0].dptr<T>();
        if (!apply) {
          // The identity; a mask of ones keeps a later backward correct.
          T* m = req[1] == kNullOp ? nullptr : mask;
          if (req[0] == kNullOp && !m) return;
          if (req[0] == kNullOp) {
            Kernel<dropout_identity<kNullOp>, xpu>::Launch(ctx.run_ctx, n, y, m, x);
            return;
          }
          SwitchReq(req[0], [&](auto r) {
            Kernel<dropout_identity<r.value>, xpu>::Launch(ctx.run_ctx, n, y, m, x);
          });
          return;
        }
        const float pkeep = 1.f - p.p;
        const double scale = pkeep > 0 ? 1.0 / (1.0 - static_cast<double>(p.p)) : 0.0;
        const resource::RandomStream s = ctx.requested.at(0).get_random();
        auto run = [&](auto r) {
          constexpr int kReq = decltype(r)::value;
          if (p.axes.empty()) {
            Kernel<dropout_block<kReq>, xpu>::Launch(ctx.run_ctx, (n + 3) / 4, y, mask, x, n, s,
                                                     pkeep, scale);
            return;
          }
          const Shape dims = in[0].shape();
          Shape reduced = dims;
          for (int64_t a : p.axes) reduced[NormalizeAxis(a, dims.ndim(), "Dropout axes")] = 1;
          Shape rstride = Shape::Filled(dims.ndim(), 0);
          int64_t stride = 1;
          for (int d = dims.ndim() - 1; d >= 0; --d) {
            rstride[d] = reduced[d] == 1 ? 0 : stride;
            stride *= reduced[d];
          }
          Kernel<dropout_axes<kReq>, xpu>::Launch(ctx.run_ctx, n, y, mask, x, dims, rstride, s,
                                                  pkeep, scale);
        };
        if (req[0] == kNullOp)
          run(std::integral_constant<int, kNullOp>{});
        else
          SwitchReq(req[0], run);
      },
      "Dropout");
}

template <typename xpu>
void DropoutBackward(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  SwitchFloatDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        SwitchReq(req[0], [&](auto r) {
          Kernel<dropout_backward<r.value>, xpu>::Launch(
              ctx.run_ctx, out[0].Size(), out[0].dptr<T>(), in[0].dptr<T>(), in[1].dptr<T>());
        });
      },
      "_backward_Dropout");
}

}  // namespace tessera::op
