#include "ops/tensor/shape_broadcast_op-inl.h"
#include "ops/tensor/shape_grad_util.h"

namespace tessera::op {
namespace {

// Checks that `in` broadcasts to `out` (same ndim, each axis equal or 1).
void CheckBroadcastable(const NodeAttrs& attrs, const Shape& in, const Shape& out) {
  TS_CHECK(in.ndim() == out.ndim()) << OpLabel(attrs) << ": cannot broadcast " << in << " to "
                                    << out << ": the numbers of axes differ";
  for (int d = 0; d < in.ndim(); ++d)
    TS_CHECK(in[d] == 0 || out[d] == 0 || in[d] == out[d] || in[d] == 1)
        << OpLabel(attrs) << ": cannot broadcast " << in << " to " << out << ": axis " << d
        << " has size " << in[d] << ", not 1 or " << out[d];
}

bool BroadcastToShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 1 && out->size() == 1) << OpLabel(attrs) << ": expects 1 input";
  const Shape& target = ParamsOf<BroadcastToParam>(attrs).shape;
  TS_CHECK(target.ndim() > 0) << OpLabel(attrs) << ": parameter 'shape' is empty";
  Shape x = (*in)[0].ndim() ? (*in)[0] : Shape::Filled(target.ndim());
  TS_CHECK(x.ndim() == target.ndim()) << OpLabel(attrs) << ": cannot broadcast " << x << " to "
                                      << target << ": the numbers of axes differ";
  Shape o = (*out)[0].ndim() ? (*out)[0] : Shape::Filled(target.ndim());
  for (int d = 0; d < target.ndim(); ++d) {
    if (target[d] == 0) {
      // Kept axis: input and output agree.
      if (x[d] == 0) x[d] = o[d];
      if (o[d] == 0) o[d] = x[d];
    } else if (o[d] == 0) {
      o[d] = target[d];
    }
  }
  CheckBroadcastable(attrs, x, target);
  AssignShape(attrs, in, 0, x, "input");
  AssignShape(attrs, out, 0, o, "output");
  return (*in)[0].known() && (*out)[0].known();
}

// broadcast_axis: the input with each axis of `axis` grown to its `size`
// (MXNet's broadcast_axis; the axis must have size 1).
bool BroadcastAxisShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 1 && out->size() == 1) << OpLabel(attrs) << ": expects 1 input";
  const auto& p = ParamsOf<BroadcastAxisParam>(attrs);
  const std::string label = OpLabel(attrs);
  TS_CHECK(p.axis.size() == p.size.size())
      << label << ": axis " << FormatValue(p.axis) << " and size " << FormatValue(p.size)
      << " must have the same length";
  const Shape& x = (*in)[0];
  if (!x.known()) return false;
  Shape target = x;
  for (size_t i = 0; i < p.axis.size(); ++i) {
    const int a = NormalizeAxis(p.axis[i], x.ndim(), label.c_str());
    TS_CHECK(x[a] == 1) << label << ": axis " << a << " of the input " << x << " has size " << x[a]
                        << "; only axes of size 1 are broadcast";
    TS_CHECK(p.size[i] > 0) << label << ": size " << p.size[i] << " for axis " << a
                            << " must be positive";
    target[a] = p.size[i];
  }
  AssignShape(attrs, out, 0, target, "output");
  return true;
}

bool BroadcastLikeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 2 && out->size() == 1) << OpLabel(attrs) << ": expects 2 inputs";
  const auto& p = ParamsOf<BroadcastLikeParam>(attrs);
  const Shape &lhs = (*in)[0], &rhs = (*in)[1];
  if (!lhs.known() || !rhs.known()) return false;
  const std::string label = OpLabel(attrs);
  Shape target = rhs;
  if (p.lhs_axes || p.rhs_axes) {
    TS_CHECK(p.lhs_axes && p.rhs_axes && p.lhs_axes->size() == p.rhs_axes->size())
        << label << ": lhs_axes " << FormatValue(p.lhs_axes) << " and rhs_axes "
        << FormatValue(p.rhs_axes) << " must both be given, with the same length";
    target = lhs;
    for (size_t i = 0; i < p.lhs_axes->size(); ++i) {
      const int a = NormalizeAxis((*p.lhs_axes)[i], lhs.ndim(), label.c_str());
      const int b = NormalizeAxis((*p.rhs_axes)[i], rhs.ndim(), label.c_str());
      target[a] = rhs[b];
    }
  }
  CheckBroadcastable(attrs, lhs, target);
  AssignShape(attrs, out, 0, target, "output");
  return true;
}

bool BroadcastBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in,
                            std::vector<Shape>* out) {
  TS_CHECK(in->size() == 2 && out->size() == 1) << OpLabel(attrs) << ": expects 2 inputs";
  AssignShape(attrs, out, 0, (*in)[1], "output");
  if (!(*in)[0].known() || !(*out)[0].known()) return false;
  CheckBroadcastable(attrs, (*out)[0], (*in)[0]);
  return true;
}

bool FirstInputType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  AssignType(attrs, out, 0, (*in)[0], "output");
  AssignType(attrs, in, 0, (*out)[0], "input");
  return (*out)[0] != DType::kUnknown;
}

}  // namespace

TS_REGISTER_OP(broadcast_to)
    .describe(R"(Repeats the size-1 axes of the input to reach `shape`.

broadcast_to([[1, 2]], shape=(2, 0)) = [[1, 2], [1, 2]] (0 keeps the size).)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<BroadcastToParam>)
    .add_argument("data", "NDArray", "Input array.")
    .add_arguments(BroadcastToParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data"}))
    .set_attr<FInferShape>("FInferShape", BroadcastToShape)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
    .set_attr<FCompute>(kFComputeCPU, BroadcastCompute<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      return MakeBackwardNode("_backward_broadcast_to", n, {og[0], n->inputs[0]});
    });

TS_REGISTER_OP(broadcast_axis)
    .add_alias("broadcast_axes")
    .describe(R"(Repeats the input along axes of size 1 (alias broadcast_axes).

broadcast_axis([[1], [2]], axis=1, size=3) = [[1, 1, 1], [2, 2, 2]] (axis 2 in Lua).)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<BroadcastAxisParam>)
    .add_argument("data", "NDArray", "Input array.")
    .add_arguments(BroadcastAxisParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data"}))
    .set_attr<FInferShape>("FInferShape", BroadcastAxisShape)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
    .set_attr<FCompute>(kFComputeCPU, BroadcastCompute<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      return MakeBackwardNode("_backward_broadcast_to", n, {og[0], n->inputs[0]});
    });

TS_REGISTER_OP(broadcast_like)
    .describe(R"(Broadcasts lhs to the shape of rhs, or only lhs_axes to the sizes of
rhs_axes: broadcast_like(x of (1,3), y of (2,3)) has shape (2,3);
broadcast_like(x of (1,3), y of (4,5), lhs_axes=(0), rhs_axes=(1)) has shape (5,3).)")
    .set_num_inputs(2)
    .set_attr_parser(ParamParser<BroadcastLikeParam>)
    .add_argument("lhs", "NDArray", "The array to broadcast.")
    .add_argument("rhs", "NDArray", "The array whose shape is used (its values are not read).")
    .add_arguments(BroadcastLikeParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"lhs", "rhs"}))
    .set_attr<FInferShape>("FInferShape", BroadcastLikeShape)
    .set_attr<FInferType>("FInferType", FirstInputType)
    .set_attr<FCompute>(kFComputeCPU, BroadcastCompute<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      std::vector<NodeEntry> g =
          MakeBackwardNode("_backward_broadcast_to", n, {og[0], n->inputs[0]});
      g.push_back(ZeroGradOf(n, 1));
      return g;
    });

TS_REGISTER_OP(_backward_broadcast_to)
    .describe(
        "Gradient of broadcast_to and broadcast_like: the output gradient (input 0) summed over "
        "the broadcast axes of the forward input (input 1, read only for its shape).")
    .set_num_inputs(2)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", BroadcastBackwardShape)
    .set_attr<FInferType>("FInferType", FirstInputType)
    .set_attr<FCompute>(kFComputeCPU, BroadcastBackwardCompute<cpu>);

}  // namespace tessera::op
