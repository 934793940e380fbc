// BlockGrad (stop_gradient): the identity with a zero gradient. MakeLoss:
// the identity whose backward ignores the head gradient and gives grad_scale
// (normalised by the batch size or the count of valid elements), so any
// symbol can be used as a loss.
#include <vector>

#include "ops/nn/make_loss-inl.h"
#include "ops/nn/nn_common.h"

namespace tessera::op {

// On the CPU the count is a loop on the host, into the temp space.
template <>
struct MakeLossCount<cpu> {
  template <typename T>
  static void Run(const OpContext&, const T* y, int64_t n, float thresh, int64_t* count) {
    using A = AccType<T>;
    int64_t valid = 0;
    for (int64_t i = 0; i < n; ++i) valid += static_cast<A>(y[i]) > A(thresh);
    *count = valid > 0 ? valid : 1;
  }
};

namespace {

std::vector<NodeEntry> MakeLossGrad(const NodePtr& n, const std::vector<NodeEntry>&) {
  return MakeGradNode("_backward_MakeLoss", n, {NodeEntry{n, 0, 0}});
}

bool FloatType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const bool ok = SameTypeAll(attrs, in, out);
  CheckFloatTypes(attrs, *in, *out);
  return ok;
}

}  // namespace

TS_REGISTER_OP(BlockGrad)
    .add_alias("stop_gradient")
    .describe(R"(Passes the input through unchanged and stops the gradient: the backward
gives the input a zero gradient, so nothing upstream is trained through this
path.

Example: with y = BlockGrad(x) * x, dy/dx = x (not 2x).)")
    .set_num_inputs(1)
    .set_num_outputs(1)
    .add_argument("data", "NDArray", "The input array.")
    .set_attr<FListInputNames>("FListInputNames", DataInputName)
    .set_attr<FInferShape>("FInferShape", ElemwiseShape<1, 1>)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
    .set_attr<FInplaceOption>("FInplaceOption", InplaceFirstInput)
    .set_attr<FCompute>(kFComputeCPU, IdentityForward<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>&) {
      return MakeZeroGradNodes(n);
    });

TS_REGISTER_OP(MakeLoss)
    .describe(R"(Marks its input as a loss: the forward is the identity, and the backward
ignores the gradient coming from above and gives every element grad_scale,
divided by the batch size (normalization='batch') or by the number of
elements above valid_thresh, at least 1 (normalization='valid'), as MXNet
does (src/operator/make_loss-inl.h).

Example: MakeLoss(x, grad_scale=2, normalization='batch') for x of shape
(4, 3) gives x the gradient 0.5 everywhere.)")
    .set_num_inputs(1)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<MakeLossParam>)
    .add_argument("data", "NDArray", "The loss values.")
    .add_arguments(MakeLossParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataInputName)
    .set_attr<FInferShape>("FInferShape", ElemwiseShape<1, 1>)
    .set_attr<FInferType>("FInferType", FloatType)
    .set_attr<FInplaceOption>("FInplaceOption", InplaceFirstInput)
    .set_attr<FCompute>(kFComputeCPU, IdentityForward<cpu>)
    .set_attr<FGradient>("FGradient", MakeLossGrad);

TS_REGISTER_OP(_backward_MakeLoss)
    .describe("Gradient of MakeLoss from its output: grad_scale, normalised. Input: out.")
    .set_num_inputs(1)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<MakeLossParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", ElemwiseShape<1, 1>)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
    .set_attr<FResourceRequest>("FResourceRequest",  // the count of valid elements
                                [](const NodeAttrs&) {
                                  return std::vector<ResourceRequest>{ResourceRequest::kTempSpace};
                                })
    .set_attr<FCompute>(kFComputeCPU, MakeLossBackward<cpu>);

}  // namespace tessera::op
