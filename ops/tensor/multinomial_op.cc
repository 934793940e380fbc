// _sample_multinomial (MXNet's sample_multinomial) on the CPU: shapes, types
// and registration; the kernels are in multinomial_op-inl.h.
#include <vector>

#include "engine/op/node.h"
#include "engine/op/op_attr_types.h"
#include "ops/tensor/multinomial_op-inl.h"

namespace tessera::op {
namespace {

uint32_t MultinomialOutputs(const NodeAttrs& attrs) {
  return ParamsOf<MultinomialParam>(attrs).get_prob ? 2 : 1;
}

bool MultinomialShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[0];
  if (!d.known()) return false;
  const Shape& s = ParamsOf<MultinomialParam>(attrs).shape;
  std::vector<int64_t> dims(d.begin(), d.end() - 1);
  dims.insert(dims.end(), s.begin(), s.end());
  if (dims.empty()) dims.push_back(1);  // one row, one draw: (1,), as MXNet
  for (size_t i = 0; i < out->size(); ++i) AssignShape(attrs, out, i, Shape(dims), "output");
  return true;
}

bool MultinomialType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const DType t = ParamsOf<MultinomialParam>(attrs).dtype;
  TS_CHECK(t == DType::kInt32 || t == DType::kInt64 || t == DType::kFloat32 || t == DType::kFloat64)
      << OpLabel(attrs) << ": dtype " << DTypeName(t)
      << " is not supported (int32, int64, float32, float64)";
  AssignType(attrs, out, 0, t, "output");
  if ((*in)[0] == DType::kUnknown) return false;
  TS_CHECK(IsFloatingPoint((*in)[0])) << OpLabel(attrs) << ": data has dtype "
                                      << DTypeName((*in)[0]) << "; probabilities are floats";
  if (out->size() == 2) AssignType(attrs, out, 1, (*in)[0], "log-probabilities");
  return true;
}

std::vector<ResourceRequest> RandomResource(const NodeAttrs&) {
  return {ResourceRequest::kRandom};
}

}  // namespace

TS_REGISTER_OP(_sample_multinomial)
    .describe(R"(Draws class indices from rows of probabilities (MXNet's
sample_multinomial): data (..., K), each row a distribution over K classes,
gives (..., shape...) indices (0-based). With get_prob, a second output holds
each draw's log-probability, through which gradients reach data.)")
    .add_alias("sample_multinomial")
    .set_num_inputs(1)
    .set_num_outputs(MultinomialOutputs)
    .set_attr_parser(ParamParser<MultinomialParam>)
    .add_argument("data", "NDArray", "Probabilities, (..., K); each row sums to 1.")
    .add_arguments(MultinomialParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data"}))
    .set_attr<FInferShape>("FInferShape", MultinomialShape)
    .set_attr<FInferType>("FInferType", MultinomialType)
    .set_attr<FResourceRequest>("FResourceRequest", RandomResource)
    .set_attr<FCompute>(kFComputeCPU, MultinomialCompute<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      if (!ParamsOf<MultinomialParam>(n->attrs).get_prob) return MakeZeroGradNodes(n);
      return MakeGradNode("_backward_sample_multinomial", n,
                          {og[1], n->inputs[0], NodeEntry{n, 0, 0}});
    });

TS_REGISTER_OP(_backward_sample_multinomial)
    .describe(
        "Gradient of sample_multinomial through its log-probabilities: inputs dlogp, "
        "data, samples; output d data.")
    .set_num_inputs(3)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<MultinomialParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& attrs, std::vector<Shape>* in,
                              std::vector<Shape>* out) {
                             std::vector<Shape> fin{(*in)[1]}, fout(1);
                             if (!MultinomialShape(attrs, &fin, &fout)) return false;
                             AssignShape(attrs, in, 0, fout[0], "output gradient");
                             AssignShape(attrs, in, 2, fout[0], "samples");
                             AssignShape(attrs, out, 0, fin[0], "gradient");
                             return true;
                           })
    .set_attr<FInferType>("FInferType",
                          [](const NodeAttrs& attrs, std::vector<DType>* in,
                             std::vector<DType>* out) {
                            if ((*in)[1] == DType::kUnknown) return false;
                            AssignType(attrs, in, 0, (*in)[1], "output gradient");
                            AssignType(attrs, out, 0, (*in)[1], "gradient");
                            return (*in)[2] != DType::kUnknown;
                          })
    .set_attr<FCompute>(kFComputeCPU, MultinomialBackward<cpu>);

}  // namespace tessera::op
