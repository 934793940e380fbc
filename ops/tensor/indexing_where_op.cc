#include "ops/tensor/indexing_where_op-inl.h"
#include "ops/tensor/shape_grad_util.h"

namespace tessera::op {
namespace {

bool WhereShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 3) << OpLabel(attrs) << ": expects 3 inputs (condition, x, y)";
  // x, y and the output share one shape.
  Shape x;
  const std::pair<const Shape*, const char*> parts[] = {
      {&(*in)[1], "x"}, {&(*in)[2], "y"}, {&(*out)[0], "the output"}};
  for (const auto& [s, what] : parts)
    TS_CHECK(MergeShape(&x, *s)) << OpLabel(attrs) << ": " << what << " has shape " << *s << " but "
                                 << x << " is required (x, y and the output share "
                                 << "one shape)";
  AssignShape(attrs, in, 1, x, "input");
  AssignShape(attrs, in, 2, x, "input");
  AssignShape(attrs, out, 0, x, "output");
  const Shape& cond = (*in)[0];
  if (!x.known()) return false;
  if (!cond.known()) {
    AssignShape(attrs, in, 0, x, "input");
    return true;
  }
  TS_CHECK(cond == x || (cond.ndim() == 1 && cond[0] == x[0]))
      << OpLabel(attrs) << ": condition has shape " << cond << " but x and y have " << x
      << " (condition needs their shape, or (" << x[0] << ") to choose whole rows)";
  return true;
}

bool WhereType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType &x = (*in)[1], &y = (*in)[2];
  TS_CHECK(x == DType::kUnknown || y == DType::kUnknown || x == y)
      << OpLabel(attrs) << ": x has dtype " << DTypeName(x) << " but y has " << DTypeName(y)
      << " (they must match)";
  const DType t = x != DType::kUnknown ? x : (y != DType::kUnknown ? y : (*out)[0]);
  AssignType(attrs, out, 0, t, "output");
  AssignType(attrs, in, 1, t, "input");
  AssignType(attrs, in, 2, t, "input");
  return t != DType::kUnknown && (*in)[0] != DType::kUnknown;
}

// Inputs: the output gradient and the condition; outputs: the gradients of
// x and y, all three of one shape. The condition pairs with them as in the
// forward op (their shape, or one value per row): the kernel reads it so.
bool WhereBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  std::vector<Shape> g{(*in)[0]};
  const bool known = SameShapeAll(attrs, &g, out);
  (*in)[0] = g[0];
  const Shape &x = (*in)[0], &cond = (*in)[1];
  if (x.known() && cond.known()) {
    TS_CHECK(cond == x || (cond.ndim() == 1 && cond[0] == x[0]))
        << OpLabel(attrs) << ": condition has shape " << cond << " but the gradient has " << x
        << " (condition needs its shape, or (" << x[0] << ") to choose whole rows)";
  }
  return known && cond.known();
}

bool WhereBackwardType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  std::vector<DType> g{(*in)[0]};
  const bool ok = SameTypeAll(attrs, &g, out);
  (*in)[0] = g[0];
  return ok && (*in)[1] != DType::kUnknown;
}

bool OneHotShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 1) << OpLabel(attrs) << ": expects 1 input (indices)";
  const Shape& idx = (*in)[0];
  if (!idx.known()) return false;
  TS_CHECK(idx.ndim() < Shape::kMaxNdim)
      << OpLabel(attrs) << ": indices " << idx << " already have the most axes an array can have";
  Shape s = idx;
  s.push_back(ParamsOf<OneHotParam>(attrs).depth);
  AssignShape(attrs, out, 0, s, "output");
  return true;
}

}  // namespace

TS_REGISTER_OP(where)
    .describe(R"(Chooses elements: x where condition is nonzero, y elsewhere.

condition has the shape of x and y, or is a vector over their first axis
choosing whole rows: where([1, 0], [[1, 2], [3, 4]], [[5, 6], [7, 8]]) =
[[1, 2], [7, 8]].)")
    .set_num_inputs(3)
    .add_argument("condition", "NDArray", "Nonzero picks x (any dtype).")
    .add_argument("x", "NDArray", "Values where condition is nonzero.")
    .add_argument("y", "NDArray", "Values where condition is zero.")
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"condition", "x", "y"}))
    .set_attr<FInferShape>("FInferShape", WhereShape)
    .set_attr<FInferType>("FInferType", WhereType)
    .set_attr<FInplaceOption>("FInplaceOption",
                              [](const NodeAttrs&) {
                                return std::vector<std::pair<int, int>>{{1, 0}, {2, 0}};
                              })
    .set_attr<FCompute>(kFComputeCPU, WhereCompute<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      std::vector<NodeEntry> xy = MakeGradNode("_backward_where", n, {og[0], n->inputs[0]});
      return std::vector<NodeEntry>{ZeroGradOf(n, 0), xy[0], xy[1]};
    });

TS_REGISTER_OP(_backward_where)
    .describe(
        "Gradient of where: the output gradient (input 0) routed to x or y by the "
        "condition (input 1).")
    .set_num_inputs(2)
    .set_num_outputs(2)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", WhereBackwardShape)
    .set_attr<FInferType>("FInferType", WhereBackwardType)
    .set_attr<FCompute>(kFComputeCPU, WhereBackwardCompute<cpu>);

TS_REGISTER_OP(one_hot)
    .describe(R"(Expands each index into a row of `depth` values: on_value at the
index, off_value elsewhere (a row of off_value for indices outside [0, depth)).

one_hot([1, 0, 2], depth=3) = [[0, 1, 0], [1, 0, 0], [0, 0, 1]].)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<OneHotParam>)
    .add_argument("indices", "NDArray", "Class numbers (0-based, any dtype).")
    .add_arguments(OneHotParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"indices"}))
    .set_attr<FInferShape>("FInferShape", OneHotShape)
    .set_attr<FInferType>("FInferType",
                          [](const NodeAttrs& attrs, std::vector<DType>* in,
                             std::vector<DType>* out) {
                            AssignType(attrs, out, 0, ParamsOf<OneHotParam>(attrs).dtype, "output");
                            return (*in)[0] != DType::kUnknown;
                          })
    .set_attr<FCompute>(kFComputeCPU, OneHotCompute<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>&) {
      return MakeZeroGradNodes(n);
    });

}  // namespace tessera::op
