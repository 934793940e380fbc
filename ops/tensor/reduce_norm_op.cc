// norm: the L1 or L2 norm over any set of axes, and its backward op.
#include "ops/tensor/reduce_op-inl.h"

namespace tessera::op {

namespace {

bool NormType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const auto& p = ParamsOf<NormParam>(attrs);
  CheckTypeSet(attrs, (*in)[0], TypeSet::kFloat, "input 0");
  if (p.out_dtype) {
    CheckTypeSet(attrs, *p.out_dtype, TypeSet::kFloat, "out_dtype");
    AssignType(attrs, out, 0, *p.out_dtype, "output");
  } else {
    AssignType(attrs, out, 0, (*in)[0], "output");
    AssignType(attrs, in, 0, (*out)[0], "input");
  }
  return (*in)[0] != DType::kUnknown && (*out)[0] != DType::kUnknown;
}

// Inputs (ograd, data, out): the gradient has data's dtype, ograd and out the norm's.
bool NormBackwardType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  AssignType(attrs, out, 0, (*in)[1], "output");
  AssignType(attrs, in, 1, (*out)[0], "input");
  AssignType(attrs, in, 2, (*in)[0], "input");
  AssignType(attrs, in, 0, (*in)[2], "input");
  for (size_t i = 0; i < in->size(); ++i) CheckTypeSet(attrs, (*in)[i], TypeSet::kFloat, "input");
  return AllKnown(*in) && AllKnown(*out);
}

}  // namespace

TS_REGISTER_OP(norm)
    .describe(R"(The L1 (ord=1: sum of |x|) or L2 (ord=2: sqrt of the sum of x^2) norm
over the given axes; every axis by default, giving shape (1,). Float dtypes;
float32 accumulates in double, 16-bit floats in float. The L2 gradient is
x / norm (0 where the norm is 0), the L1 gradient sign(x).

Example: norm([[1, 2], [3, 4]]) = [5.4772], norm([[1, -2], [3, 4]], ord=1, axis=1) = [3, 7].)")
    .set_num_inputs(1)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<NormParam>)
    .add_argument("data", "NDArray", "The input array.")
    .add_arguments(NormParam::Fields())
    .set_attr<FInferShape>("FInferShape", ReduceShape<NormParam>)
    .set_attr<FInferType>("FInferType", NormType)
    .set_attr<FCompute>(kFComputeCPU, NormCompute<cpu>)
    .set_attr<FGradient>("FGradient", ReduceGradUseInOut{"_backward_norm"});

TS_REGISTER_OP(_backward_norm)
    .describe(
        "Gradient of norm: ograd * x / norm (ord 2) or ograd * sign(x) (ord 1). "
        "Inputs: ograd, data, out.")
    .set_num_inputs(3)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<NormParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", ReduceBackwardShape<NormParam>)
    .set_attr<FInferType>("FInferType", NormBackwardType)
    .set_attr<FInplaceOption>("FInplaceOption",
                              [](const NodeAttrs&) {
                                return std::vector<std::pair<int, int>>{{1, 0}};
                              })
    .set_attr<FCompute>(kFComputeCPU, NormBackwardCompute<cpu>);

}  // namespace tessera::op
