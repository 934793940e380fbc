// Same-shape binary operators (elemwise_add, elemwise_sub, elemwise_mul,
// elemwise_div): both inputs and the output have one shape, inferred from
// any of them.
#include "ops/tensor/elemwise_binary_op-inl.h"

namespace tessera::op {

namespace {
std::vector<std::string> LhsRhsNames(const NodeAttrs&) {
  return {"lhs", "rhs"};
}
}  // namespace

#define TS_REGISTER_SAME_SHAPE(name, fn)                                      \
  TS_REGISTER_OP(name)                                                        \
      .set_num_inputs(2)                                                      \
      .set_num_outputs(1)                                                     \
      .add_argument("lhs", "NDArray", "First input.")                         \
      .add_argument("rhs", "NDArray", "Second input, of the same shape.")     \
      .set_attr<FListInputNames>("FListInputNames", LhsRhsNames)              \
      .set_attr<FInferShape>("FInferShape", ElemwiseShape<2, 1>)              \
      .set_attr<FInferType>("FInferType", ElemwiseTypeOf<binary::fn::kTypes>) \
      .set_attr<FInplaceOption>("FInplaceOption", InplaceAllInputs<2>)        \
      .set_attr<FLayoutClasses>("FLayoutClasses", ElementwiseLayout)          \
      .set_attr<FCompute>(kFComputeCPU, BinaryCompute<cpu, binary::fn>)

TS_REGISTER_SAME_SHAPE(elemwise_add, add)
    .add_alias("_plus")
    .add_alias("_Plus")
    .add_alias("_add")
    .describe(R"(lhs + rhs, elementwise, for inputs of the same shape (broadcast_add broadcasts).

Example: elemwise_add([1, 2], [10, 20]) = [11, 22].)")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseNone{"_backward_add"});

TS_REGISTER_SAME_SHAPE(elemwise_sub, sub)
    .add_alias("_minus")
    .add_alias("_Minus")
    .add_alias("_sub")
    .describe(R"(lhs - rhs, elementwise, for inputs of the same shape.

Example: elemwise_sub([1, 2], [10, 20]) = [-9, -18].)")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseNone{"_backward_sub"});

TS_REGISTER_SAME_SHAPE(elemwise_mul, mul)
    .add_alias("_mul")
    .add_alias("_Mul")
    .describe(R"(lhs * rhs, elementwise, for inputs of the same shape.

Example: elemwise_mul([1, 2], [10, 20]) = [10, 40].)")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_mul"});

TS_REGISTER_SAME_SHAPE(elemwise_div, div)
    .add_alias("_div")
    .add_alias("_Div")
    .describe(R"(lhs / rhs, elementwise, for inputs of the same shape.

Integer division truncates toward zero and gives 0 where rhs is 0.
Example: elemwise_div([1, 6], [4, 3]) = [0.25, 2].)")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_div"});

#undef TS_REGISTER_SAME_SHAPE

// Backward ops: (out_grad[, lhs, rhs]) -> (lhs_grad, rhs_grad).
#define TS_REGISTER_SAME_SHAPE_GRAD(name, n_in, lgrad, rgrad)                    \
  TS_REGISTER_OP(name)                                                           \
      .set_num_inputs(n_in)                                                      \
      .set_num_outputs(2)                                                        \
      .set_attr<TIsBackward>("TIsBackward", true)                                \
      .set_attr<FInferShape>("FInferShape", ElemwiseShape<n_in, 2>)              \
      .set_attr<FInferType>("FInferType", ElemwiseTypeOf<binary::lgrad::kTypes>) \
      .set_attr<FLayoutClasses>("FLayoutClasses", ElementwiseLayout)             \
      .set_attr<FCompute>(kFComputeCPU, BinaryGradCompute<cpu, binary::lgrad, binary::rgrad>)

TS_REGISTER_SAME_SHAPE_GRAD(_backward_add, 1, one, one)
    .describe("Gradient of elemwise_add: the output gradient, for both inputs.");
TS_REGISTER_SAME_SHAPE_GRAD(_backward_sub, 1, one, minus_one)
    .describe("Gradient of elemwise_sub: the output gradient and its negative.");
TS_REGISTER_SAME_SHAPE_GRAD(_backward_mul, 3, mul_lgrad, mul_rgrad)
    .describe("Gradient of elemwise_mul: (out_grad * rhs, out_grad * lhs).");
TS_REGISTER_SAME_SHAPE_GRAD(_backward_div, 3, div_lgrad, div_rgrad)
    .describe("Gradient of elemwise_div: (out_grad / rhs, -out_grad * lhs / rhs^2).");

#undef TS_REGISTER_SAME_SHAPE_GRAD

}  // namespace tessera::op
