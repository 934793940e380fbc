// The SGD steps of sgd_multi_op.cc (mp_sgd_update, mp_sgd_mom_update and the
// multi_* updates): one element kernel serves all six, on the CPU and on the
// GPU (sgd_multi_op.cu); a multi_* op launches it once per weight.
#pragma once

#include <string>
#include <vector>

#include "ops/optimizer/optimizer_op-inl.h"

namespace tessera::op {

// One weight's arrays; mom and w32 null where the op has none.
template <typename T, typename W>
struct SgdArrays {
  const T* weight;
  const T* grad;
  W* mom;
  W* w32;
  T* out;
  int64_t n;
};

struct SgdHyper {
  float lr, wd, momentum, rescale, clip;
};

// Element i of one weight's step; W: the type the step is computed in (the
// master's). The weight may be the output (read before written).
struct SgdStepKernel {
  template <typename T, typename W>
  TS_XINLINE static void Map(int64_t i, SgdArrays<T, W> a, SgdHyper h, OpReqType req) {
    W w = a.w32 ? a.w32[i] : W(a.weight[i]);
    W g = W(h.rescale) * W(a.grad[i]);
    if (h.clip >= 0) g = ClipBound(g, W(h.clip));
    g += W(h.wd) * w;
    if (a.mom) {
      a.mom[i] = W(h.momentum) * a.mom[i] - W(h.lr) * g;
      w += a.mom[i];
    } else {
      w -= W(h.lr) * g;
    }
    if (a.w32) a.w32[i] = w;
    if (req == kAddTo)
      a.out[i] = T(W(a.out[i]) + w);
    else if (req != kNullOp)
      a.out[i] = T(w);
  }
};

// Inputs per weight: weight, grad, [mom], [weight32].
template <bool kMom, bool kMP>
constexpr int kStride = 2 + int(kMom) + int(kMP);

// Runs the step on weight w of the op's inputs with the op's hyperparameters.
template <typename xpu, bool kMom, bool kMP>
void SgdGroups(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
               const std::vector<OpReqType>& req, const std::vector<TBlob>& out,
               const std::vector<SgdHyper>& hyper) {
  constexpr int s = kStride<kMom, kMP>;
  for (size_t w = 0; w < out.size(); ++w) {
    const TBlob* g = &in[w * s];
    auto run = [&](auto ttag, auto wtag) {
      using T = typename decltype(ttag)::type;
      using W = typename decltype(wtag)::type;
      SgdArrays<T, W> a{g[0].dptr<T>(),
                        g[1].dptr<T>(),
                        kMom ? g[2].dptr<W>() : nullptr,
                        kMP ? g[s - 1].dptr<W>() : nullptr,
                        out[w].dptr<T>(),
                        g[0].Size()};
      Kernel<SgdStepKernel, xpu>::Launch(ctx.run_ctx, a.n, a, hyper[w], req[w]);
    };
    switch (g[0].dtype()) {
      case DType::kFloat16:
        run(TypeTag<float16>{}, TypeTag<float>{});
        break;
      case DType::kFloat32:
        run(TypeTag<float>{}, TypeTag<float>{});
        break;
      case DType::kFloat64:
        if constexpr (!kMP) {
          run(TypeTag<double>{}, TypeTag<double>{});
          break;
        }
        [[fallthrough]];
      default:
        TS_THROW << OpLabel(attrs) << ": weight " << w << " has dtype " << DTypeName(g[0].dtype())
                 << ", which this update does not take";
    }
  }
}

// ---- mp_sgd_update and mp_sgd_mom_update: SGDParam / SGDMomParam.

template <typename xpu, bool kMom>
void MPSgdCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  SgdHyper h{};
  if constexpr (kMom) {
    const auto& p = ParamsOf<SGDMomParam>(attrs);
    h = {p.lr, p.wd, p.momentum, p.rescale_grad, p.clip_gradient};
  } else {
    const auto& p = ParamsOf<SGDParam>(attrs);
    h = {p.lr, p.wd, 0.f, p.rescale_grad, p.clip_gradient};
  }
  SgdGroups<xpu, kMom, true>(attrs, ctx, in, req, out, {h});
}

// ---- multi_*: per-weight learning rates and weight decays.

template <bool kMom>
struct MultiSGDParam : Params<MultiSGDParam<kMom>> {
  std::vector<double> lrs, wds;
  float momentum = 0, rescale_grad = 1, clip_gradient = -1;
  int num_weights = 1;
  static void Declare(ParamDecl<MultiSGDParam>& d) {
    d.field("lrs", &MultiSGDParam::lrs).describe("Learning rates, one per weight.");
    d.field("wds", &MultiSGDParam::wds).describe("Weight decays, one per weight.");
    if (kMom)
      d.field("momentum", &MultiSGDParam::momentum)
          .set_default(0.f)
          .describe("The decay rate of momentum estimates at each epoch.");
    d.field("rescale_grad", &MultiSGDParam::rescale_grad)
        .set_default(1.f)
        .describe("Rescale gradient to grad = rescale_grad*grad.");
    d.field("clip_gradient", &MultiSGDParam::clip_gradient)
        .set_default(-1.f)
        .describe("Clip gradient to [-clip_gradient, clip_gradient]; off when < 0.");
    d.field("num_weights", &MultiSGDParam::num_weights)
        .set_default(1)
        .set_lower_bound(1)
        .describe("Number of weights updated.");
  }
  void Check(const std::string& op) const {
    TS_CHECK(lrs.size() == size_t(num_weights) && wds.size() == size_t(num_weights))
        << op << ": lrs has " << lrs.size() << " and wds " << wds.size()
        << " values; num_weights is " << num_weights;
  }
};

template <bool kMom>
void ParseMultiSGD(NodeAttrs* attrs) {
  ParamParser<MultiSGDParam<kMom>>(attrs);
  ParamsOf<MultiSGDParam<kMom>>(*attrs).Check(OpLabel(*attrs));
}

template <typename xpu, bool kMom, bool kMP>
void MultiSgdCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<MultiSGDParam<kMom>>(attrs);
  std::vector<SgdHyper> h(size_t(p.num_weights));
  for (size_t w = 0; w < h.size(); ++w)
    h[w] = {float(p.lrs[w]), float(p.wds[w]), p.momentum, p.rescale_grad, p.clip_gradient};
  SgdGroups<xpu, kMom, kMP>(attrs, ctx, in, req, out, h);
}

}  // namespace tessera::op
