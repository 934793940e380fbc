// softmax, log_softmax, softmin and their backward ops.
#include <sstream>

#include "ops/tensor/softmax_op-inl.h"

namespace tessera::op {

namespace {

void CheckSoftmaxParams(const NodeAttrs& attrs) {
  const auto& p = ParamsOf<SoftmaxParam>(attrs);
  TS_CHECK(!p.use_length.value_or(false))
      << OpLabel(attrs) << ": use_length=True (masking by a length input) is not supported";
  TS_CHECK(!p.temperature || *p.temperature != 0)
      << OpLabel(attrs) << ": temperature must be nonzero";
}

bool SoftmaxShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  CheckSoftmaxParams(attrs);
  const bool ok = ElemwiseShape<1, 1>(attrs, in, out);
  const Shape& s = (*in)[0];
  if (s.ndim() > 0) {
    std::ostringstream what;
    what << OpLabel(attrs) << " on input of shape " << s;
    MakeSoftmaxGeom(s, ParamsOf<SoftmaxParam>(attrs).axis, what.str().c_str());
  }
  return ok;
}

void CheckFloat(const NodeAttrs& attrs, DType t, const char* what) {
  TS_CHECK(t == DType::kUnknown || IsFloatingPoint(t))
      << OpLabel(attrs) << ": " << what << " has dtype " << DTypeName(t)
      << ", supported: float16, bfloat16, float32, float64";
}

bool SoftmaxType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const auto& p = ParamsOf<SoftmaxParam>(attrs);
  CheckFloat(attrs, (*in)[0], "input 0");
  if (p.dtype) {
    CheckFloat(attrs, *p.dtype, "dtype");
    AssignType(attrs, out, 0, *p.dtype, "output");
    return (*in)[0] != DType::kUnknown;
  }
  return SameTypeAll(attrs, in, out);
}

// The backward takes (ograd, out), plus data when the output dtype differs
// from the input's (the gradient then takes data's dtype).
uint32_t SoftmaxBackwardInputs(const NodeAttrs& attrs) {
  return ParamsOf<SoftmaxParam>(attrs).dtype ? 3 : 2;
}

bool SoftmaxBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  return SameShapeAll(attrs, in, out);
}

bool SoftmaxBackwardType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  AssignType(attrs, in, 0, (*in)[1], "input");
  AssignType(attrs, in, 1, (*in)[0], "input");
  const size_t src = in->size() > 2 ? 2 : 1;
  AssignType(attrs, out, 0, (*in)[src], "output");
  AssignType(attrs, in, src, (*out)[0], "input");
  for (size_t i = 0; i < in->size(); ++i) CheckFloat(attrs, (*in)[i], "input");
  return AllKnown(*in) && AllKnown(*out);
}

struct SoftmaxGrad {
  const char* op_name;
  std::vector<NodeEntry> operator()(const NodePtr& n, const std::vector<NodeEntry>& ograds) const {
    std::vector<NodeEntry> in{ograds[0], NodeEntry{n, 0, 0}};
    if (ParamsOf<SoftmaxParam>(n->attrs).dtype) in.push_back(n->inputs[0]);
    return MakeGradNode(op_name, n, std::move(in));
  }
};

std::vector<std::pair<int, int>> InplaceFirst(const NodeAttrs&) {
  return {{0, 0}};
}

const char* const kSoftmaxArgsDoc = R"(

`axis` picks the axis (default -1, the last), `temperature` divides the
input first, `dtype` sets the output dtype (e.g. float32 results for
float16 data). Float dtypes; 16-bit floats compute in float.)";

}  // namespace

#define TS_SOFTMAX_OP(name, description)                    \
  TS_REGISTER_OP(name)                                      \
      .describe(std::string(description) + kSoftmaxArgsDoc) \
      .set_num_inputs(1)                                    \
      .set_num_outputs(1)                                   \
      .set_attr_parser(ParamParser<SoftmaxParam>)           \
      .add_argument("data", "NDArray", "The input array.")  \
      .add_arguments(SoftmaxParam::Fields())                \
      .set_attr<FInferShape>("FInferShape", SoftmaxShape)   \
      .set_attr<FInferType>("FInferType", SoftmaxType)      \
      .set_attr<FInplaceOption>("FInplaceOption", InplaceFirst)

#define TS_SOFTMAX_BACKWARD_OP(name, description)                 \
  TS_REGISTER_OP(name)                                            \
      .describe(description)                                      \
      .set_num_inputs(SoftmaxBackwardInputs)                      \
      .set_num_outputs(1)                                         \
      .set_attr_parser(ParamParser<SoftmaxParam>)                 \
      .set_attr<TIsBackward>("TIsBackward", true)                 \
      .set_attr<FInferShape>("FInferShape", SoftmaxBackwardShape) \
      .set_attr<FInferType>("FInferType", SoftmaxBackwardType)

TS_SOFTMAX_OP(softmax, R"(Softmax along an axis: exp(x - max) / sum(exp(x - max)) over each
slice, so large inputs do not overflow.

Example: softmax([1, 2, 3]) = [0.0900, 0.2447, 0.6652].)")
    .set_attr<FCompute>(kFComputeCPU, SoftmaxCompute<cpu, false, false>)
    .set_attr<FGradient>("FGradient", SoftmaxGrad{"_backward_softmax"});

TS_SOFTMAX_OP(log_softmax,
              R"(Log of the softmax along an axis, computed as x - max - log(sum(exp(x - max)))
(stable for large and very negative inputs).

Example: log_softmax([1, 2, 3]) = [-2.4076, -1.4076, -0.4076].)")
    .set_attr<FCompute>(kFComputeCPU, SoftmaxCompute<cpu, true, false>)
    .set_attr<FGradient>("FGradient", SoftmaxGrad{"_backward_log_softmax"});

TS_SOFTMAX_OP(softmin,
              R"(Softmax of the negated input along an axis: small values get large weights.

Example: softmin([1, 2, 3]) = [0.6652, 0.2447, 0.0900].)")
    .set_attr<FCompute>(kFComputeCPU, SoftmaxCompute<cpu, false, true>)
    .set_attr<FGradient>("FGradient", SoftmaxGrad{"_backward_softmin"});

TS_SOFTMAX_BACKWARD_OP(_backward_softmax,
                       "Gradient of softmax from its output y: y * (g - sum(g * y)) / "
                       "temperature. Inputs: ograd, out[, data].")
    .set_attr<FInplaceOption>("FInplaceOption", InplaceFirst)
    .set_attr<FCompute>(kFComputeCPU, SoftmaxBackwardCompute<cpu, false, false>);

TS_SOFTMAX_BACKWARD_OP(_backward_log_softmax,
                       "Gradient of log_softmax from its output y: (g - exp(y) * sum(g)) / "
                       "temperature. Inputs: ograd, out[, data].")
    .set_attr<FInplaceOption>("FInplaceOption", InplaceFirst)
    .set_attr<FCompute>(kFComputeCPU, SoftmaxBackwardCompute<cpu, true, false>);

TS_SOFTMAX_BACKWARD_OP(_backward_softmin,
                       "Gradient of softmin from its output y: -y * (g - sum(g * y)) / "
                       "temperature. Inputs: ograd, out[, data].")
    .set_attr<FInplaceOption>("FInplaceOption", InplaceFirst)
    .set_attr<FCompute>(kFComputeCPU, SoftmaxBackwardCompute<cpu, false, true>);

}  // namespace tessera::op
