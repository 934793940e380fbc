#include "ops/tensor/shape_grad_util.h"
#include "ops/tensor/shape_reshape_op-inl.h"

#include "engine/op/reshape_spec.h"

namespace tessera::op {
namespace {

void CheckArity(const NodeAttrs& attrs, const std::vector<Shape>* in, size_t n_in,
                const std::vector<Shape>* out) {
  TS_CHECK(in->size() == n_in && out->size() == 1)
      << OpLabel(attrs) << ": expects " << n_in << " input(s) and 1 output";
}

// Fills the one unknown dimension of `in` from the output's size, so a
// reshape whose output is known can complete a partly known input.
void FillOneUnknown(const NodeAttrs& attrs, std::vector<Shape>* in, const Shape& out) {
  Shape s = (*in)[0];
  if (!out.known() || s.ndim() == 0) return;
  int unknown = -1, n_unknown = 0;
  int64_t known = 1;
  for (int d = 0; d < s.ndim(); ++d) {
    if (s[d] == 0) {
      unknown = d;
      ++n_unknown;
    } else if (__builtin_mul_overflow(known, s[d], &known)) {
      return;  // too large to hold any output; the op's own check says so
    }
  }
  if (n_unknown != 1) return;
  TS_CHECK(out.Size() % known == 0)
      << OpLabel(attrs) << ": input shape " << s << " cannot hold the " << out.Size()
      << " elements of output shape " << out;
  s[unknown] = out.Size() / known;
  AssignShape(attrs, in, 0, s, "input");
}

bool ReshapeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  CheckArity(attrs, in, 1, out);
  const auto& p = ParamsOf<ReshapeParam>(attrs);
  FillOneUnknown(attrs, in, (*out)[0]);
  if (!(*in)[0].known()) return false;
  const std::string label = OpLabel(attrs);
  AssignShape(attrs, out, 0, InferReshape((*in)[0], p.shape, p.reverse, label.c_str()), "output");
  return true;
}

bool FlattenShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  CheckArity(attrs, in, 1, out);
  const Shape& o = (*out)[0];
  if ((*in)[0].ndim() > 0 && o.known()) {
    Shape s = (*in)[0];
    if (s[0] == 0) s[0] = o[0];
    AssignShape(attrs, in, 0, s, "input");
    FillOneUnknown(attrs, in, o);
  }
  const Shape& s = (*in)[0];
  if (!s.known()) return false;
  AssignShape(attrs, out, 0, Shape{s[0], s.ProdRange(1, s.ndim())}, "output");
  return true;
}

bool ExpandDimsShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  CheckArity(attrs, in, 1, out);
  const int axis_param = ParamsOf<ExpandDimsParam>(attrs).axis;
  const std::string label = OpLabel(attrs);
  const Shape& o = (*out)[0];
  if ((*in)[0].ndim() == 0 && o.ndim() > 1) {
    // The input is the output without the inserted axis.
    const int axis = NormalizeAxis(axis_param, o.ndim(), label.c_str());
    std::vector<int64_t> dims = o.ToVector();
    dims.erase(dims.begin() + axis);
    AssignShape(attrs, in, 0, Shape(dims), "input");
  }
  const Shape& s = (*in)[0];
  if (s.ndim() == 0) return false;
  TS_CHECK(s.ndim() < Shape::kMaxNdim)
      << label << ": input " << s << " already has the most dimensions an array can have";
  const int axis = NormalizeAxis(axis_param, s.ndim() + 1, label.c_str());
  std::vector<int64_t> dims = s.ToVector();
  dims.insert(dims.begin() + axis, 1);
  AssignShape(attrs, out, 0, Shape(dims), "output");
  return s.known();
}

bool SqueezeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  CheckArity(attrs, in, 1, out);
  const auto& p = ParamsOf<SqueezeParam>(attrs);
  const Shape& s = (*in)[0];
  if (!s.known()) return false;
  const std::string label = OpLabel(attrs);
  std::vector<bool> drop(static_cast<size_t>(s.ndim()), false);
  if (p.axis) {
    for (int64_t a : *p.axis) {
      const int ax = NormalizeAxis(a, s.ndim(), label.c_str());
      TS_CHECK(s[ax] == 1) << label << ": cannot squeeze axis " << a << " of shape " << s
                           << ": its size is " << s[ax] << ", not 1";
      TS_CHECK(!drop[static_cast<size_t>(ax)])
          << label << ": axis " << a << " is given twice (shape " << s << ")";
      drop[static_cast<size_t>(ax)] = true;
    }
  } else {
    for (int d = 0; d < s.ndim(); ++d) drop[static_cast<size_t>(d)] = s[d] == 1;
  }
  std::vector<int64_t> dims;
  for (int d = 0; d < s.ndim(); ++d)
    if (!drop[static_cast<size_t>(d)]) dims.push_back(s[d]);
  if (dims.empty()) dims.push_back(1);
  AssignShape(attrs, out, 0, Shape(dims), "output");
  return true;
}

// The output gradient reshaped to the input: input 1 is the forward input,
// read only for its shape.
bool BackwardReshapeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  CheckArity(attrs, in, 2, out);
  AssignShape(attrs, out, 0, (*in)[1], "output");
  AssignShape(attrs, in, 1, (*out)[0], "input");
  const Shape &g = (*in)[0], &o = (*out)[0];
  if (!g.known() || !o.known()) return false;
  TS_CHECK(g.Size() == o.Size()) << OpLabel(attrs) << ": gradient " << g
                                 << " does not have the size of input " << o;
  return true;
}

bool BackwardReshapeType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  AssignType(attrs, out, 0, (*in)[0], "output");
  AssignType(attrs, in, 0, (*out)[0], "input");
  return (*out)[0] != DType::kUnknown;
}

std::vector<NodeEntry> ReshapeGrad(const NodePtr& n, const std::vector<NodeEntry>& ograds) {
  return MakeBackwardNode("_backward_reshape", n, {ograds[0], n->inputs[0]});
}

// reshape_like: lhs's elements in rhs's shape (rhs read only for its shape).
bool ReshapeLikeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  CheckArity(attrs, in, 2, out);
  AssignShape(attrs, out, 0, (*in)[1], "output");
  AssignShape(attrs, in, 1, (*out)[0], "rhs");
  const Shape &l = (*in)[0], &o = (*out)[0];
  if (!l.known() || !o.known()) return false;
  TS_CHECK(l.Size() == o.Size()) << OpLabel(attrs) << ": lhs " << l << " has " << l.Size()
                                 << " elements, rhs " << o << " has " << o.Size();
  return true;
}

bool ReshapeLikeType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  AssignType(attrs, out, 0, (*in)[0], "output");
  AssignType(attrs, in, 0, (*out)[0], "lhs");
  return (*out)[0] != DType::kUnknown && (*in)[1] != DType::kUnknown;
}

// lhs gets the output gradient in its own shape; rhs, a shape donor, zeros.
std::vector<NodeEntry> ReshapeLikeGrad(const NodePtr& n, const std::vector<NodeEntry>& ograds) {
  return {MakeBackwardNode("_backward_reshape", n, {ograds[0], n->inputs[0]})[0], ZeroGradOf(n, 1)};
}

std::vector<std::string> DataName(const NodeAttrs&) {
  return {"data"};
}

}  // namespace

TS_REGISTER_OP(reshape)
    .add_alias("Reshape")
    .describe(R"(Gives the data a new shape with the same number of elements (a copy).

The special values of `shape` follow MXNet: with input shape (2,3,4),
shape (4,0,2) gives (4,3,2); (6,-1) gives (6,4); (-2) keeps (2,3,4); (-3,4)
gives (6,4); (-4,1,2,-2) gives (1,2,3,4). With reverse=True the values are
matched from the right: input (10,5,4), shape (-1,0) gives (50,4), reversed
(40,5).)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<ReshapeParam>)
    .add_argument("data", "NDArray", "Input array.")
    .add_arguments(ReshapeParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataName)
    .set_attr<FInferShape>("FInferShape", ReshapeShape)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
    .set_attr<FInplaceOption>("FInplaceOption", InplaceFirst)
    .set_attr<FCompute>(kFComputeCPU, ReshapeLikeCompute<cpu>)
    .set_attr<FGradient>("FGradient", ReshapeGrad);

TS_REGISTER_OP(flatten)
    .add_alias("Flatten")
    .describe(R"(Collapses every axis after the first: (d1, d2, ..., dk) becomes
(d1, d2*...*dk); a 1-D input (n) becomes (n, 1).)")
    .set_num_inputs(1)
    .add_argument("data", "NDArray", "Input array.")
    .set_attr<FListInputNames>("FListInputNames", DataName)
    .set_attr<FInferShape>("FInferShape", FlattenShape)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
    .set_attr<FInplaceOption>("FInplaceOption", InplaceFirst)
    .set_attr<FCompute>(kFComputeCPU, ReshapeLikeCompute<cpu>)
    .set_attr<FGradient>("FGradient", ReshapeGrad);

TS_REGISTER_OP(expand_dims)
    .describe(R"(Inserts a new axis of size 1 at `axis`: (2,3) with axis=1 becomes (2,1,3).)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<ExpandDimsParam>)
    .add_argument("data", "NDArray", "Input array.")
    .add_arguments(ExpandDimsParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataName)
    .set_attr<FInferShape>("FInferShape", ExpandDimsShape)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
    .set_attr<FInplaceOption>("FInplaceOption", InplaceFirst)
    .set_attr<FCompute>(kFComputeCPU, ReshapeLikeCompute<cpu>)
    .set_attr<FGradient>("FGradient", ReshapeGrad);

TS_REGISTER_OP(squeeze)
    .describe(R"(Removes axes of size 1: (2,1,3,1) becomes (2,3); with axis=(1) it
becomes (2,3,1). Naming an axis whose size is not 1 is an error.)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<SqueezeParam>)
    .add_argument("data", "NDArray", "Input array.")
    .add_arguments(SqueezeParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataName)
    .set_attr<FInferShape>("FInferShape", SqueezeShape)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
    .set_attr<FInplaceOption>("FInplaceOption", InplaceFirst)
    .set_attr<FCompute>(kFComputeCPU, ReshapeLikeCompute<cpu>)
    .set_attr<FGradient>("FGradient", ReshapeGrad);

TS_REGISTER_OP(reshape_like)
    .describe(R"(The elements of lhs in the shape of rhs (a copy); the two must hold as
many elements. rhs is read only for its shape and gets a zero gradient.

Example: reshape_like(lhs of shape (6,), rhs of shape (2,3)) has shape (2,3).)")
    .set_num_inputs(2)
    .add_argument("lhs", "NDArray", "The data.")
    .add_argument("rhs", "NDArray", "The array whose shape the output takes.")
    .set_attr<FListInputNames>("FListInputNames",
                               [](const NodeAttrs&) {
                                 return std::vector<std::string>{"lhs", "rhs"};
                               })
    .set_attr<FInferShape>("FInferShape", ReshapeLikeShape)
    .set_attr<FInferType>("FInferType", ReshapeLikeType)
    .set_attr<FInplaceOption>("FInplaceOption", InplaceFirst)
    .set_attr<FCompute>(kFComputeCPU, ReshapeLikeCompute<cpu>)
    .set_attr<FGradient>("FGradient", ReshapeLikeGrad);

TS_REGISTER_OP(_backward_reshape)
    .describe(
        "Gradient of the reshape-like ops: the output gradient (input 0) given the shape of the "
        "forward input (input 1, read only for its shape).")
    .set_num_inputs(2)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", BackwardReshapeShape)
    .set_attr<FInferType>("FInferType", BackwardReshapeType)
    .set_attr<FInplaceOption>("FInplaceOption", InplaceFirst)
    .set_attr<FCompute>(kFComputeCPU, ReshapeLikeCompute<cpu>);

}  // namespace tessera::op
