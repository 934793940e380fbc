// SoftmaxActivation: softmax per instance or across channels (MXNet's
// src/operator/nn/softmax_activation-inl.h), and its backward.
#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/node.h"
#include "engine/op/op.h"
#include "ops/nn/nn_common.h"
#include "ops/nn/softmax_activation-inl.h"
#include "ops/tensor/softmax_op-inl.h"

namespace tessera::op {

namespace {

bool SoftmaxActivationShape(const NodeAttrs& attrs, std::vector<Shape>* in,
                            std::vector<Shape>* out) {
  const bool ok = ElemwiseShape<1, 1>(attrs, in, out);
  const Shape& s = (*in)[0];
  if (s.ndim() > 0 && ParamsOf<SoftmaxActivationParam>(attrs).mode == kChannel) {
    TS_CHECK(s.ndim() >= 3) << OpLabel(attrs)
                            << ": mode='channel' needs data with at least 3 dimensions, got " << s;
  }
  return ok;
}

}  // namespace

TS_REGISTER_OP(SoftmaxActivation)
    .describe(R"(Applies softmax activation to input. This is intended for internal layers.

mode='instance' (default) computes the softmax of each instance, along the
last axis (MXNet flattens the data to (rest, last)); mode='channel' computes
the softmax across channels (axis 1) at each position of each instance
(data with at least 3 dimensions).

Example: SoftmaxActivation([[1, 2, 3]]) = [[0.0900, 0.2447, 0.6652]].)")
    .set_num_inputs(1)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<SoftmaxActivationParam>)
    .add_argument("data", "NDArray", "The input array.")
    .add_arguments(SoftmaxActivationParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data"}))
    .set_attr<FInferShape>("FInferShape", SoftmaxActivationShape)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FInplaceOption>("FInplaceOption",
                              [](const NodeAttrs&) {
                                return std::vector<std::pair<int, int>>{{0, 0}};
                              })
    .set_attr<FCompute>(kFComputeCPU, SoftmaxActivationForward<cpu>)
    .set_attr<FGradient>("FGradient", ElemwiseGradUseOut{"_backward_SoftmaxActivation"});

TS_REGISTER_OP(_backward_SoftmaxActivation)
    .describe(
        "Gradient of SoftmaxActivation from its output y: y * (g - sum(g * y)) along the "
        "softmax axis. Inputs: ograd, out.")
    .set_num_inputs(2)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<SoftmaxActivationParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", ElemwiseShape<2, 1>)
    .set_attr<FInferType>("FInferType", ElemwiseType<2, 1>)
    .set_attr<FInplaceOption>("FInplaceOption",
                              [](const NodeAttrs&) {
                                return std::vector<std::pair<int, int>>{{0, 0}};
                              })
    .set_attr<FCompute>(kFComputeCPU, SoftmaxActivationBackward<cpu>);

}  // namespace tessera::op
