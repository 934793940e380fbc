// Broadcasting binary operators: registration, shape inference and CPU
// kernels. MXNet's names (broadcast_add, ...) with NumPy's as aliases (add,
// subtract, ...).
#include "ops/tensor/elemwise_broadcast_op-inl.h"

namespace tessera::op {

Shape BroadcastShapes(const NodeAttrs& attrs, const Shape& lhs, const Shape& rhs) {
  const int nd = std::max(lhs.ndim(), rhs.ndim());
  Shape out = Shape::Filled(nd);
  for (int d = 0; d < nd; ++d) {
    const int64_t l = AlignedDim(lhs, nd, d), r = AlignedDim(rhs, nd, d);
    if (l == r || r == 1) {
      out[d] = l;
    } else if (l == 1) {
      out[d] = r;
    } else if (l == 0 || r == 0) {
      out[d] = l == 0 ? r : l;  // the unknown side must be 1 or the known size
    } else {
      TS_THROW << OpLabel(attrs) << ": operands could not be broadcast together with shapes " << lhs
               << " and " << rhs << " (dimension " << d << ": " << l << " vs " << r << ")";
    }
  }
  return out;
}

namespace {

bool BroadcastInferShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 2) << OpLabel(attrs) << ": expects 2 inputs, got " << in->size();
  const Shape& lhs = (*in)[0];
  const Shape& rhs = (*in)[1];
  if (lhs.is_none() || rhs.is_none()) return false;
  AssignShape(attrs, out, 0, BroadcastShapes(attrs, lhs, rhs), "output");
  return (*out)[0].known();
}

// (out_grad, lhs, rhs) -> (lhs_grad, rhs_grad): each gradient has its
// operand's shape, and out_grad the broadcast shape.
bool BroadcastGradInferShape(const NodeAttrs& attrs, std::vector<Shape>* in,
                             std::vector<Shape>* out) {
  TS_CHECK(in->size() == 3 && out->size() == 2)
      << OpLabel(attrs) << ": expects 3 inputs and 2 outputs";
  for (int k = 0; k < 2; ++k) {
    AssignShape(attrs, out, k, (*in)[k + 1], "output");
    AssignShape(attrs, in, k + 1, (*out)[k], "input");
  }
  if ((*in)[1].is_none() || (*in)[2].is_none()) return false;
  AssignShape(attrs, in, 0, BroadcastShapes(attrs, (*in)[1], (*in)[2]), "input");
  return AllKnown(*in) && AllKnown(*out);
}

std::vector<std::string> LhsRhsNames(const NodeAttrs&) {
  return {"lhs", "rhs"};
}

std::vector<NodeEntry> ZeroGrad(const NodePtr& n, const std::vector<NodeEntry>&) {
  return MakeZeroGradNodes(n);
}

}  // namespace

#define TS_REGISTER_BROADCAST(name, fn)                                       \
  TS_REGISTER_OP(broadcast_##name)                                            \
      .set_num_inputs(2)                                                      \
      .set_num_outputs(1)                                                     \
      .add_argument("lhs", "NDArray", "First input.")                         \
      .add_argument("rhs", "NDArray", "Second input, broadcast against lhs.") \
      .set_attr<FListInputNames>("FListInputNames", LhsRhsNames)              \
      .set_attr<FInferShape>("FInferShape", BroadcastInferShape)              \
      .set_attr<FInferType>("FInferType", ElemwiseTypeOf<binary::fn::kTypes>) \
      .set_attr<FInplaceOption>("FInplaceOption", InplaceAllInputs<2>)        \
      .set_attr<FCompute>(kFComputeCPU, BroadcastCompute<cpu, binary::fn>);

#define TS_REGISTER_BROADCAST_WITH_GRAD(name, fn, lgrad, rgrad)                           \
  TS_REGISTER_BROADCAST(name, fn)                                                         \
  TS_REGISTER_OP(broadcast_##name)                                                        \
      .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_broadcast_" #name}); \
  TS_REGISTER_OP(_backward_broadcast_##name)                                              \
      .describe("Gradient of broadcast_" #name                                            \
                ": the output gradient times each partial derivative, summed over the "   \
                "axes the operand was broadcast along.")                                  \
      .set_num_inputs(3)                                                                  \
      .set_num_outputs(2)                                                                 \
      .set_attr<TIsBackward>("TIsBackward", true)                                         \
      .set_attr<FInferShape>("FInferShape", BroadcastGradInferShape)                      \
      .set_attr<FInferType>("FInferType", ElemwiseTypeOf<binary::lgrad::kTypes>)          \
      .set_attr<FCompute>(kFComputeCPU, BroadcastGradCompute<cpu, binary::lgrad, binary::rgrad>);
TS_BROADCAST_GRAD_OPS(TS_REGISTER_BROADCAST_WITH_GRAD)
#undef TS_REGISTER_BROADCAST_WITH_GRAD

#define TS_REGISTER_BROADCAST_LOGIC(name) \
  TS_REGISTER_BROADCAST(name, name)       \
  TS_REGISTER_OP(broadcast_##name).set_attr<FGradient>("FGradient", ZeroGrad);
TS_BROADCAST_LOGIC_OPS(TS_REGISTER_BROADCAST_LOGIC)
#undef TS_REGISTER_BROADCAST_LOGIC
#undef TS_REGISTER_BROADCAST

// Names and documentation.
TS_REGISTER_OP(broadcast_add)
    .add_alias("broadcast_plus")
    .add_alias("add")
    .describe(
        R"(lhs + rhs with NumPy broadcasting: shapes align from the right and a dimension of 1
stretches to the other's size.

Example: broadcast_add([[1], [2]], [10, 20, 30]) = [[11, 21, 31], [12, 22, 32]].)");
TS_REGISTER_OP(broadcast_sub)
    .add_alias("broadcast_minus")
    .add_alias("subtract")
    .describe(
        R"(lhs - rhs with NumPy broadcasting.

Example: broadcast_sub([[1, 2], [3, 4]], [1, 2]) = [[0, 0], [2, 2]].)");
TS_REGISTER_OP(broadcast_mul)
    .add_alias("multiply")
    .describe(
        R"(lhs * rhs with NumPy broadcasting.

Example: broadcast_mul([[1, 2], [3, 4]], [[10], [100]]) = [[10, 20], [300, 400]].)");
TS_REGISTER_OP(broadcast_div)
    .add_alias("divide")
    .describe(
        R"(lhs / rhs with NumPy broadcasting. Integer division truncates toward zero and gives 0
where rhs is 0.

Example: broadcast_div([[2, 4], [6, 8]], [2, 4]) = [[1, 1], [3, 2]].)");
TS_REGISTER_OP(broadcast_mod)
    .add_alias("mod")
    .describe(
        R"(lhs mod rhs with NumPy broadcasting. The result has the sign of rhs (Python's and
NumPy's rule); x mod 0 is 0 for every type, as in MXNet (mshadow_op::mod).

Example: broadcast_mod([-7, 7], [3, -3]) = [2, -2].)");
TS_REGISTER_OP(broadcast_power)
    .add_alias("power")
    .describe(
        R"(lhs ^ rhs with NumPy broadcasting. Integer powers are exact; a negative integer
exponent gives 1 / lhs^|rhs| truncated toward zero (0 unless lhs is 1 or -1).

Example: broadcast_power([2, 3], [[2], [3]]) = [[4, 9], [8, 27]].)");
TS_REGISTER_OP(broadcast_maximum)
    .add_alias("maximum")
    .describe(
        R"(Elementwise maximum with NumPy broadcasting; NaN wins.

Example: broadcast_maximum([1, 5], [3]) = [3, 5].)");
TS_REGISTER_OP(broadcast_minimum)
    .add_alias("minimum")
    .describe(
        R"(Elementwise minimum with NumPy broadcasting; NaN wins.

Example: broadcast_minimum([1, 5], [3]) = [1, 3].)");
TS_REGISTER_OP(broadcast_hypot)
    .add_alias("hypot")
    .describe(
        R"(sqrt(lhs^2 + rhs^2) with NumPy broadcasting, without overflow in between (floating
point only).

Example: broadcast_hypot([3, 5], [4, 12]) = [5, 13].)");
TS_REGISTER_OP(broadcast_equal)
    .add_alias("equal")
    .describe(
        R"(1 where lhs == rhs, else 0, in the inputs' dtype, with NumPy broadcasting.

Example: broadcast_equal([1, 2], [2]) = [0, 1].)");
TS_REGISTER_OP(broadcast_not_equal)
    .add_alias("not_equal")
    .describe(
        R"(1 where lhs != rhs, else 0, in the inputs' dtype, with NumPy broadcasting.

Example: broadcast_not_equal([1, 2], [2]) = [1, 0].)");
TS_REGISTER_OP(broadcast_greater)
    .add_alias("greater")
    .describe(
        R"(1 where lhs > rhs, else 0, in the inputs' dtype, with NumPy broadcasting.

Example: broadcast_greater([1, 3], [2]) = [0, 1].)");
TS_REGISTER_OP(broadcast_greater_equal)
    .add_alias("greater_equal")
    .describe(
        R"(1 where lhs >= rhs, else 0, in the inputs' dtype, with NumPy broadcasting.

Example: broadcast_greater_equal([1, 2], [2]) = [0, 1].)");
TS_REGISTER_OP(broadcast_lesser)
    .add_alias("lesser")
    .describe(
        R"(1 where lhs < rhs, else 0, in the inputs' dtype, with NumPy broadcasting.

Example: broadcast_lesser([1, 3], [2]) = [1, 0].)");
TS_REGISTER_OP(broadcast_lesser_equal)
    .add_alias("lesser_equal")
    .describe(
        R"(1 where lhs <= rhs, else 0, in the inputs' dtype, with NumPy broadcasting.

Example: broadcast_lesser_equal([2, 3], [2]) = [1, 0].)");
TS_REGISTER_OP(broadcast_logical_and)
    .add_alias("logical_and")
    .describe(
        R"(1 where both lhs and rhs are nonzero, else 0, in the inputs' dtype, with NumPy
broadcasting.

Example: broadcast_logical_and([0, 1, 2], [1]) = [0, 1, 1].)");
TS_REGISTER_OP(broadcast_logical_or)
    .add_alias("logical_or")
    .describe(
        R"(1 where lhs or rhs is nonzero, else 0, in the inputs' dtype, with NumPy broadcasting.

Example: broadcast_logical_or([0, 0, 2], [0, 1, 0]) = [0, 1, 1].)");
TS_REGISTER_OP(broadcast_logical_xor)
    .add_alias("logical_xor")
    .describe(
        R"(1 where exactly one of lhs and rhs is nonzero, else 0, in the inputs' dtype, with NumPy
broadcasting.

Example: broadcast_logical_xor([0, 1, 2], [1]) = [1, 0, 0].)");

}  // namespace tessera::op
