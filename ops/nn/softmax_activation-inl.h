// SoftmaxActivation's parameters and computation, shared by the CPU
// (softmax_activation.cc) and GPU (softmax_activation.cu) registrations:
// RunSoftmax for the device (softmax_op-inl.h, softmax_op_gpu.cuh).
#pragma once

#include <vector>

#include "engine/op/params.h"
#include "ops/nn/nn_common.h"
#include "ops/tensor/softmax_op-inl.h"

namespace tessera::op {

enum SoftmaxActivationMode { kInstance = 0, kChannel = 1 };

struct SoftmaxActivationParam : Params<SoftmaxActivationParam> {
  int mode = kInstance;
  static void Declare(ParamDecl<SoftmaxActivationParam>& d) {
    d.field("mode", &SoftmaxActivationParam::mode)
        .set_default(kInstance)
        .add_enum("instance", kInstance)
        .add_enum("channel", kChannel)
        .describe(
            "Specifies how to compute the softmax. If set to ``instance``, it computes softmax "
            "for each instance. If set to ``channel``, It computes cross channel softmax for "
            "each position of each instance.");
  }
};

// instance: the data as MXNet's FlatTo2D (rest, last), softmax along the
// last axis; channel: (n, c, rest) along axis 1.
inline SoftmaxGeom ActivationGeom(const Shape& s, const SoftmaxActivationParam& p) {
  const int64_t size = s.Size();
  if (size == 0) return {0, 1, 1};
  if (p.mode == kChannel) return {s[0], s[1], size / s[0] / s[1]};
  return {size / s[s.ndim() - 1], s[s.ndim() - 1], 1};
}

template <typename xpu>
void SoftmaxActivationForward(const NodeAttrs& attrs, const OpContext& ctx,
                              const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                              const std::vector<TBlob>& out) {
  if (req[0] == kNullOp || in[0].shape().Size() == 0) return;
  const SoftmaxGeom g = ActivationGeom(in[0].shape(), ParamsOf<SoftmaxActivationParam>(attrs));
  SwitchFloatDType(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    RunSoftmax<false>(xpu{}, ctx, g, in[0].dptr<T>(), out[0].dptr<T>(), 1.0, req[0]);
  });
}

// Inputs: ograd, out.
template <typename xpu>
void SoftmaxActivationBackward(const NodeAttrs& attrs, const OpContext& ctx,
                               const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                               const std::vector<TBlob>& out) {
  if (req[0] == kNullOp || in[1].shape().Size() == 0) return;
  const SoftmaxGeom g = ActivationGeom(in[1].shape(), ParamsOf<SoftmaxActivationParam>(attrs));
  SwitchFloatDType(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    RunSoftmaxGrad<false>(xpu{}, ctx, g, in[0].dptr<T>(), in[1].dptr<T>(), out[0].dptr<T>(), 1.0,
                          req[0]);
  });
}

}  // namespace tessera::op
