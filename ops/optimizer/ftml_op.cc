// ftml_update (MXNet's): Follow the Moving Leader (Zheng and Kwok, 2017),
// MXNet's FTMLKernel element by element.
#include <cmath>
#include <vector>

#include "ops/optimizer/optimizer_op-inl.h"

namespace tessera::op {
namespace {

struct FTMLParam : Params<FTMLParam> {
  float lr = 0, beta1 = 0.6f, beta2 = 0.999f, epsilon = 1e-8f, wd = 0, rescale_grad = 1,
        clip_grad = -1;
  int t = 0;
  static void Declare(ParamDecl<FTMLParam>& d) {
    DeclareLr(d, &FTMLParam::lr);
    d.field("beta1", &FTMLParam::beta1).set_default(0.6f).describe("Generally close to 0.5.");
    d.field("beta2", &FTMLParam::beta2).set_default(0.999f).describe("Generally close to 1.");
    d.field("epsilon", &FTMLParam::epsilon)
        .set_default(1e-8f)
        .describe("Epsilon to prevent div 0.");
    d.field("t", &FTMLParam::t).set_lower_bound(1).describe("Number of update.");
    d.field("wd", &FTMLParam::wd).set_default(0.f).describe("Weight decay.");
    d.field("rescale_grad", &FTMLParam::rescale_grad)
        .set_default(1.f)
        .describe("Rescale gradient to grad = rescale_grad*grad.");
    d.field("clip_grad", &FTMLParam::clip_grad)
        .set_default(-1.f)
        .describe("Clip rescale_grad * grad to [-clip_grad, clip_grad]; off when < 0.");
  }
};

// in: weight, grad, d, v, z (the last three updated in place).
void FTMLUpdate(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<FTMLParam>(attrs);
  SwitchOptimizerDType(in[0].dtype(), "ftml_update", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* w = in[0].dptr<T>();
    const T* g = in[1].dptr<T>();
    T* d = in[2].dptr<T>();
    T* v = in[3].dptr<T>();
    T* z = in[4].dptr<T>();
    T* o = out[0].dptr<T>();
    const T lr = T(p.lr), b1 = T(p.beta1), b2 = T(p.beta2), eps = T(p.epsilon), wd = T(p.wd);
    const T rescale = T(p.rescale_grad), clip = T(p.clip_grad);
    const T b1t = T(1) - std::pow(b1, T(p.t)), b2t = T(1) - std::pow(b2, T(p.t));
    const int64_t n = in[0].Size();
    [[maybe_unused]] const int threads = CpuThreads(ctx.run_ctx, n);
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#endif
    for (int64_t i = 0; i < n; ++i) {
      const T wi = w[i];
      const T gi = (clip >= T(0) ? ClipBound(rescale * g[i], clip) : rescale * g[i]) + wd * wi;
      v[i] = b2 * v[i] + (T(1) - b2) * gi * gi;
      const T dt = b1t / lr * (std::sqrt(v[i] / b2t) + eps);
      z[i] = b1 * z[i] + (T(1) - b1) * gi - (dt - b1 * d[i]) * wi;
      d[i] = dt;
      if (req[0] == kAddTo)
        o[i] += -z[i] / dt;
      else if (req[0] != kNullOp)
        o[i] = -z[i] / dt;
    }
  });
}

}  // namespace

TS_REGISTER_OP(ftml_update)
    .describe(R"(The FTML optimizer's update (MXNet's ftml_update):

  g = clip(rescale_grad * grad, clip_grad) + wd * weight
  v = beta2 * v + (1 - beta2) * g^2
  d_t = (1 - beta1^t) / lr * (sqrt(v / (1 - beta2^t)) + epsilon)
  z = beta1 * z + (1 - beta1) * g - (d_t - beta1 * d) * weight
  d = d_t;  weight = -z / d_t

d, v and z are updated in place; the new weight is the output (`out=weight`
makes the update in place). float32 and float64.)")
    .set_num_inputs(5)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<FTMLParam>)
    .add_argument("weight", "NDArray", "Weight")
    .add_argument("grad", "NDArray", "Gradient")
    .add_argument("d", "NDArray", "Internal state d_t")
    .add_argument("v", "NDArray", "Internal state v_t")
    .add_argument("z", "NDArray", "Internal state z_t")
    .add_arguments(FTMLParam::Fields())
    .set_attr<FListInputNames>("FListInputNames",
                               FixedInputNames({"weight", "grad", "d", "v", "z"}))
    .set_attr<FMutateInputs>("FMutateInputs",
                             [](const NodeAttrs&) {
                               return std::vector<uint32_t>{2, 3, 4};
                             })
    .set_attr<FInferShape>("FInferShape", ElemwiseShape<5, 1>)
    .set_attr<FInferType>("FInferType", ElemwiseType<5, 1>)
    .set_attr<FInplaceOption>("FInplaceOption",
                              [](const NodeAttrs&) {
                                return std::vector<std::pair<int, int>>{{0, 0}};
                              })
    .set_attr<FCompute>(kFComputeCPU, FTMLUpdate);

}  // namespace tessera::op
