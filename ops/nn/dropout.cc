// Dropout: in training (or mode='always') each element is kept with
// probability 1 - p and scaled by 1 / (1 - p), else zeroed; otherwise the
// identity. The mask (0 or 1 / (1 - p), as MXNet stores it) is a hidden second
// output that the backward multiplies the output gradient by.
#include <optional>
#include <string>
#include <vector>

#include "ops/nn/dropout-inl.h"

namespace tessera::op {

namespace {

bool DropoutShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 1) << OpLabel(attrs) << ": expects 1 input (data), got " << in->size();
  const bool ok = SameShapeAll(attrs, in, out);
  const Shape& d = (*in)[0];
  if (d.ndim() > 0)
    for (int64_t a : DropParams(attrs).axes) {
      std::string what = OpLabel(attrs) + " on data of shape " + d.ToString() + ": axes";
      NormalizeAxis(a, d.ndim(), what.c_str());
    }
  return ok;
}

bool DropoutType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const bool ok = SameTypeAll(attrs, in, out);
  CheckFloatTypes(attrs, *in, *out);
  return ok;
}

std::vector<NodeEntry> DropoutGrad(const NodePtr& n, const std::vector<NodeEntry>& ograds) {
  return MakeGradNode("_backward_Dropout", n, {ograds[0], NodeEntry{n, 1, 0}});
}

}  // namespace

TS_REGISTER_OP(Dropout)
    .describe(R"(Applies dropout: during training each element is zeroed with probability
p and the kept ones are scaled by 1 / (1 - p), so the expected value is
unchanged; outside training (mode='training', the default) the output is the
input. Training means an executor's forward(is_train=true) or a call inside
mx.autograd.record; mode='always' drops in inference too. `axes` shares one
draw along the given axes (e.g. the time axis of a sequence). The draws come
from the seeded random stream (mx.random.seed).

The mask is kept as a hidden second output for the backward, which is
ograd * mask.)")
    .set_num_inputs(1)
    .set_num_outputs(2)
    .set_attr_parser(ParamParser<DropoutParam>)
    .add_argument("data", "NDArray", "Input array to which dropout is applied.")
    .add_arguments(DropoutParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataInputName)
    .set_attr<FListOutputNames>("FListOutputNames",
                                [](const NodeAttrs&) {
                                  return std::vector<std::string>{"output", "mask"};
                                })
    .set_attr<FNumVisibleOutputs>("FNumVisibleOutputs", [](const NodeAttrs&) { return 1u; })
    .set_attr<FInferShape>("FInferShape", DropoutShape)
    .set_attr<FInferType>("FInferType", DropoutType)
    .set_attr<FInplaceOption>("FInplaceOption", InplaceFirstInput)
    .set_attr<FResourceRequest>("FResourceRequest",
                                [](const NodeAttrs&) {
                                  return std::vector<ResourceRequest>{ResourceRequest::kRandom};
                                })
    .set_attr<FCompute>(kFComputeCPU, DropoutForward<cpu>)
    .set_attr<FGradient>("FGradient", DropoutGrad);

TS_REGISTER_OP(_backward_Dropout)
    .describe("Gradient of Dropout: ograd * mask. Inputs: ograd, mask.")
    .set_num_inputs(2)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<DropoutParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", ElemwiseShape<2, 1>)
    .set_attr<FInferType>("FInferType", ElemwiseType<2, 1>)
    .set_attr<FInplaceOption>("FInplaceOption", InplaceFirstInput)
    .set_attr<FCompute>(kFComputeCPU, DropoutBackward<cpu>);

}  // namespace tessera::op
