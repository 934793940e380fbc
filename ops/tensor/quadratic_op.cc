#include "ops/tensor/quadratic_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(quadratic)
    .describe(R"(Applies y = a x^2 + b x + c elementwise.

Example: quadratic([[1, 2], [3, 4]], a=1, b=2, c=3) = [[6, 11], [18, 27]].)")
    .set_num_inputs(1)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<QuadraticParam>)
    .add_argument("data", "NDArray", "Input array.")
    .add_arguments(QuadraticParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data"}))
    .set_attr<FInferShape>("FInferShape", ElemwiseShape<1, 1>)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
    .set_attr<FInplaceOption>("FInplaceOption",
                              [](const NodeAttrs&) {
                                return std::vector<std::pair<int, int>>{{0, 0}};
                              })
    .set_attr<FCompute>(kFComputeCPU, QuadraticForward<cpu>)
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_quadratic"});

TS_REGISTER_OP(_backward_quadratic)
    .describe("Gradient of quadratic: out_grad * (2 a x + b).")
    .set_num_inputs(2)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<QuadraticParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", ElemwiseShape<2, 1>)
    .set_attr<FInferType>("FInferType", ElemwiseType<2, 1>)
    .set_attr<FInplaceOption>("FInplaceOption",
                              [](const NodeAttrs&) {
                                return std::vector<std::pair<int, int>>{{0, 0}, {1, 0}};
                              })
    .set_attr<FCompute>(kFComputeCPU, QuadraticBackward<cpu>);

}  // namespace tessera::op
