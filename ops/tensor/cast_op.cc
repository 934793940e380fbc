#include "ops/tensor/cast_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(Cast)
    .add_alias("cast")
    .describe(
        "Converts every element to `dtype` as a C++ cast does (floats to integers "
        "truncate toward zero; nonzero to bool is true).")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<CastParam>)
    .add_argument("data", "NDArray", "Input array.")
    .add_arguments(CastParam::Fields())
    .set_attr<FInferShape>("FInferShape", ElemwiseShape<1, 1>)
    .set_attr<FInferType>("FInferType",
                          [](const NodeAttrs& attrs, std::vector<DType>* in,
                             std::vector<DType>* out) {
                            AssignType(attrs, out, 0, ParamsOf<CastParam>(attrs).dtype, "output");
                            return (*in)[0] != DType::kUnknown;
                          })
    .set_attr<FInplaceOption>("FInplaceOption",
                              [](const NodeAttrs&) {
                                return std::vector<std::pair<int, int>>{{0, 0}};
                              })
    .set_attr<FCompute>(kFComputeCPU, CastCompute<cpu>)
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_cast"});

// The gradient casts back to the dtype of the forward input (input 1, read
// only for its dtype).
TS_REGISTER_OP(_backward_cast)
    .describe("Gradient of Cast: the output gradient converted to the input dtype.")
    .set_num_inputs(2)
    .set_attr_parser(ParamParser<CastParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", ElemwiseShape<2, 1>)
    .set_attr<FInferType>("FInferType",
                          [](const NodeAttrs& attrs, std::vector<DType>* in,
                             std::vector<DType>* out) {
                            AssignType(attrs, out, 0, (*in)[1], "output");
                            return (*out)[0] != DType::kUnknown;
                          })
    .set_attr<FCompute>(kFComputeCPU, CastCompute<cpu>);

// zeros_like and ones_like: the input's shape and dtype filled with `value`;
// no gradient flows back to the input.
#define TS_FILL_LIKE_OP(name, value, description)                                             \
  TS_REGISTER_OP(name)                                                                        \
      .describe(description)                                                                  \
      .set_num_inputs(1)                                                                      \
      .add_argument("data", "NDArray", "The array whose shape and dtype are used.")           \
      .set_attr<FInferShape>("FInferShape", ElemwiseShape<1, 1>)                              \
      .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)                                 \
      .set_attr<FCompute>(kFComputeCPU, FillLikeCompute<cpu, value>)                          \
      .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>&) { \
        return MakeZeroGradNodes(n);                                                          \
      })

TS_FILL_LIKE_OP(zeros_like, 0, "An array of zeros with the shape and dtype of the input.");
TS_FILL_LIKE_OP(ones_like, 1, "An array of ones with the shape and dtype of the input.");

}  // namespace tessera::op
