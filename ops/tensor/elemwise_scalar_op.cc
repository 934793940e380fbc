// Scalar forms of the binary operators: registration and CPU kernels. The
// array keeps its shape and dtype; `scalar` is a parameter.
#include "ops/tensor/elemwise_scalar_op-inl.h"

namespace tessera::op {

namespace {

std::vector<std::string> DataInputName(const NodeAttrs&) {
  return {"data"};
}

std::vector<NodeEntry> ZeroGrad(const NodePtr& n, const std::vector<NodeEntry>&) {
  return MakeZeroGradNodes(n);
}

}  // namespace

#define TS_REGISTER_SCALAR(name, fn, reverse)                                 \
  TS_REGISTER_OP(name)                                                        \
      .set_num_inputs(1)                                                      \
      .set_num_outputs(1)                                                     \
      .set_attr_parser(ParamParser<ScalarParam>)                              \
      .add_argument("data", "NDArray", "Input array.")                        \
      .add_arguments(ScalarParam::Fields())                                   \
      .set_attr<FListInputNames>("FListInputNames", DataInputName)            \
      .set_attr<FInferShape>("FInferShape", ElemwiseShape<1, 1>)              \
      .set_attr<FInferType>("FInferType", ElemwiseTypeOf<binary::fn::kTypes>) \
      .set_attr<FInplaceOption>("FInplaceOption", InplaceAllInputs<1>)        \
      .set_attr<FCompute>(kFComputeCPU, ScalarCompute<cpu, binary::fn, reverse>);
TS_SCALAR_OPS(TS_REGISTER_SCALAR)
#undef TS_REGISTER_SCALAR

#define TS_REGISTER_SCALAR_GRAD(name, grad, reverse)                            \
  TS_REGISTER_OP(name)                                                          \
      .set_num_inputs(2)                                                        \
      .set_num_outputs(1)                                                       \
      .set_attr_parser(ParamParser<ScalarParam>)                                \
      .set_attr<TIsBackward>("TIsBackward", true)                               \
      .set_attr<FInferShape>("FInferShape", ElemwiseShape<2, 1>)                \
      .set_attr<FInferType>("FInferType", ElemwiseTypeOf<binary::grad::kTypes>) \
      .set_attr<FInplaceOption>("FInplaceOption", InplaceAllInputs<2>)          \
      .set_attr<FCompute>(kFComputeCPU, ScalarGradCompute<cpu, binary::grad, reverse>);
TS_SCALAR_GRAD_OPS(TS_REGISTER_SCALAR_GRAD)
#undef TS_REGISTER_SCALAR_GRAD

// Documentation, MXNet's legacy aliases, gradients.
TS_REGISTER_OP(_plus_scalar)
    .add_alias("_PlusScalar")
    .describe("data + scalar.\n\nExample: _plus_scalar([1, 2], scalar=10) = [11, 12].")
    .set_attr<FGradient>("FGradient", ElemwiseGradApply{"_copy"});
TS_REGISTER_OP(_minus_scalar)
    .add_alias("_MinusScalar")
    .describe("data - scalar.\n\nExample: _minus_scalar([1, 2], scalar=10) = [-9, -8].")
    .set_attr<FGradient>("FGradient", ElemwiseGradApply{"_copy"});
TS_REGISTER_OP(_rminus_scalar)
    .add_alias("_RMinusScalar")
    .describe("scalar - data.\n\nExample: _rminus_scalar([1, 2], scalar=10) = [9, 8].")
    .set_attr<FGradient>("FGradient", ElemwiseGradApply{"negative"});
TS_REGISTER_OP(_mul_scalar)
    .add_alias("_MulScalar")
    .describe("data * scalar.\n\nExample: _mul_scalar([1, 2], scalar=10) = [10, 20].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseNone{"_mul_scalar"});
TS_REGISTER_OP(_div_scalar)
    .add_alias("_DivScalar")
    .describe(
        "data / scalar. Integer division truncates toward zero; division by 0 gives 0 for "
        "integers.\n\nExample: _div_scalar([1, 2], scalar=4) = [0.25, 0.5].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseNone{"_div_scalar"});
TS_REGISTER_OP(_rdiv_scalar)
    .add_alias("_RDivScalar")
    .describe("scalar / data.\n\nExample: _rdiv_scalar([1, 4], scalar=2) = [2, 0.5].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_rdiv_scalar"});
TS_REGISTER_OP(_mod_scalar)
    .add_alias("_ModScalar")
    .describe(
        "data mod scalar, with the sign of the scalar (Python's rule).\n\nExample: "
        "_mod_scalar([-7, 7], scalar=3) = [2, 1].")
    .set_attr<FGradient>("FGradient", ElemwiseGradApply{"_copy"});
TS_REGISTER_OP(_rmod_scalar)
    .add_alias("_RModScalar")
    .describe(
        "scalar mod data, with the sign of data (Python's rule).\n\nExample: "
        "_rmod_scalar([3, -3], scalar=7) = [1, -2].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_rmod_scalar"});
TS_REGISTER_OP(_power_scalar)
    .add_alias("_PowerScalar")
    .describe("data ^ scalar.\n\nExample: _power_scalar([2, 3], scalar=2) = [4, 9].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_power_scalar"});
TS_REGISTER_OP(_rpower_scalar)
    .add_alias("_RPowerScalar")
    .describe("scalar ^ data.\n\nExample: _rpower_scalar([2, 3], scalar=2) = [4, 8].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_rpower_scalar"});
TS_REGISTER_OP(_maximum_scalar)
    .add_alias("_MaximumScalar")
    .describe("max(data, scalar).\n\nExample: _maximum_scalar([1, 5], scalar=3) = [3, 5].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_maximum_scalar"});
TS_REGISTER_OP(_minimum_scalar)
    .add_alias("_MinimumScalar")
    .describe("min(data, scalar).\n\nExample: _minimum_scalar([1, 5], scalar=3) = [1, 3].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_minimum_scalar"});
TS_REGISTER_OP(_hypot_scalar)
    .add_alias("_HypotScalar")
    .describe(
        "sqrt(data^2 + scalar^2) (floating point only).\n\nExample: _hypot_scalar([3, 5], "
        "scalar=4) = [5, 6.40312].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_hypot_scalar"});
TS_REGISTER_OP(_equal_scalar)
    .add_alias("_EqualScalar")
    .describe(
        "1 where data == scalar, else 0.\n\nExample: _equal_scalar([1, 2], scalar=2) = [0, 1].")
    .set_attr<FGradient>("FGradient", ZeroGrad);
TS_REGISTER_OP(_not_equal_scalar)
    .add_alias("_NotEqualScalar")
    .describe(
        "1 where data != scalar, else 0.\n\nExample: _not_equal_scalar([1, 2], scalar=2) = [1, 0].")
    .set_attr<FGradient>("FGradient", ZeroGrad);
TS_REGISTER_OP(_greater_scalar)
    .add_alias("_GreaterScalar")
    .describe(
        "1 where data > scalar, else 0.\n\nExample: _greater_scalar([1, 3], scalar=2) = [0, 1].")
    .set_attr<FGradient>("FGradient", ZeroGrad);
TS_REGISTER_OP(_greater_equal_scalar)
    .add_alias("_GreaterEqualScalar")
    .describe(
        "1 where data >= scalar, else 0.\n\nExample: _greater_equal_scalar([1, 2], scalar=2) = "
        "[0, 1].")
    .set_attr<FGradient>("FGradient", ZeroGrad);
TS_REGISTER_OP(_lesser_scalar)
    .add_alias("_LesserScalar")
    .describe(
        "1 where data < scalar, else 0.\n\nExample: _lesser_scalar([1, 3], scalar=2) = [1, 0].")
    .set_attr<FGradient>("FGradient", ZeroGrad);
TS_REGISTER_OP(_lesser_equal_scalar)
    .add_alias("_LesserEqualScalar")
    .describe(
        "1 where data <= scalar, else 0.\n\nExample: _lesser_equal_scalar([2, 3], scalar=2) = "
        "[1, 0].")
    .set_attr<FGradient>("FGradient", ZeroGrad);
TS_REGISTER_OP(_logical_and_scalar)
    .add_alias("_LogicalAndScalar")
    .describe(
        "1 where data and scalar are both nonzero, else 0.\n\nExample: "
        "_logical_and_scalar([0, 2], scalar=1) = [0, 1].")
    .set_attr<FGradient>("FGradient", ZeroGrad);
TS_REGISTER_OP(_logical_or_scalar)
    .add_alias("_LogicalOrScalar")
    .describe(
        "1 where data or scalar is nonzero, else 0.\n\nExample: _logical_or_scalar([0, 2], "
        "scalar=0) = [0, 1].")
    .set_attr<FGradient>("FGradient", ZeroGrad);
TS_REGISTER_OP(_logical_xor_scalar)
    .add_alias("_LogicalXorScalar")
    .describe(
        "1 where exactly one of data and scalar is nonzero, else 0.\n\nExample: "
        "_logical_xor_scalar([0, 2], scalar=1) = [1, 0].")
    .set_attr<FGradient>("FGradient", ZeroGrad);

TS_REGISTER_OP(_backward_rdiv_scalar)
    .describe("Gradient of _rdiv_scalar: -out_grad * scalar / data^2.");
TS_REGISTER_OP(_backward_rmod_scalar)
    .describe("Gradient of _rmod_scalar: -out_grad * floor(scalar / data).");
TS_REGISTER_OP(_backward_power_scalar)
    .describe("Gradient of _power_scalar: out_grad * scalar * data^(scalar - 1).");
TS_REGISTER_OP(_backward_rpower_scalar)
    .describe("Gradient of _rpower_scalar: out_grad * scalar^data * ln(scalar).");
TS_REGISTER_OP(_backward_maximum_scalar)
    .describe("Gradient of _maximum_scalar: out_grad where data >= scalar, else 0.");
TS_REGISTER_OP(_backward_minimum_scalar)
    .describe("Gradient of _minimum_scalar: out_grad where data <= scalar, else 0.");
TS_REGISTER_OP(_backward_hypot_scalar)
    .describe("Gradient of _hypot_scalar: out_grad * data / hypot(data, scalar).");

}  // namespace tessera::op
