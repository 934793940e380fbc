// Activation on the GPU: the functors of activation-inl.h through
// Kernel<act::forward / act::backward, gpu>, on the op's stream.
#include "engine/op/kernel_launch_cuda.cuh"
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

}  // namespace

TS_REGISTER_OP(Activation).set_attr<FCompute>(kFComputeGPU, ActForwardGpu);
TS_REGISTER_OP(_backward_Activation).set_attr<FCompute>(kFComputeGPU, ActBackwardGpu);

}  // namespace tessera::op
