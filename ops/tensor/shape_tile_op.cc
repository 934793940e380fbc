#include "ops/tensor/shape_grad_util.h"
#include "ops/tensor/shape_tile_op-inl.h"

namespace tessera::op {

TileDims PadTile(const NodeAttrs& attrs, const Shape& in) {
  const auto& reps = ParamsOf<TileParam>(attrs).reps;
  TS_CHECK(!reps.empty()) << OpLabel(attrs) << ": parameter 'reps' is empty";
  for (int64_t r : reps)
    TS_CHECK(r >= 1) << OpLabel(attrs) << ": reps " << FormatValue(reps) << " must all be >= 1";
  const size_t n = std::max(reps.size(), static_cast<size_t>(in.ndim()));
  TS_CHECK(n <= size_t(Shape::kMaxNdim)) << OpLabel(attrs) << ": reps " << FormatValue(reps)
                                         << " has more than " << Shape::kMaxNdim << " axes";
  TileDims t;
  t.in.assign(n - static_cast<size_t>(in.ndim()), 1);
  t.in.insert(t.in.end(), in.begin(), in.end());
  t.reps.assign(n - reps.size(), 1);
  t.reps.insert(t.reps.end(), reps.begin(), reps.end());
  return t;
}

int RepeatAxis(const NodeAttrs& attrs, int ndim) {
  const auto& p = ParamsOf<RepeatParam>(attrs);
  if (!p.axis) return -1;
  const std::string label = OpLabel(attrs);
  return NormalizeAxis(*p.axis, ndim, label.c_str());
}

std::vector<bool> FlipAxes(const NodeAttrs& attrs, int ndim) {
  const auto& axes = ParamsOf<FlipParam>(attrs).axis;
  const std::string label = OpLabel(attrs);
  std::vector<bool> flip(static_cast<size_t>(ndim), false);
  for (int64_t a : axes) {
    const int ax = NormalizeAxis(a, ndim, label.c_str());
    TS_CHECK(!flip[static_cast<size_t>(ax)])
        << label << ": axis " << a << " is given twice in " << FormatValue(axes);
    flip[static_cast<size_t>(ax)] = true;
  }
  return flip;
}

namespace {

void CheckArity(const NodeAttrs& attrs, const std::vector<Shape>* in, size_t n) {
  TS_CHECK(in->size() == n) << OpLabel(attrs) << ": expects " << n << " input(s)";
}

bool TileShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  CheckArity(attrs, in, 1);
  const Shape& x = (*in)[0];
  const Shape& o = (*out)[0];
  if (x.ndim() > 0 && o.known()) {
    // Unknown input axes from the output, when the axes line up one to one.
    const TileDims t = PadTile(attrs, x);
    if (t.in.size() == static_cast<size_t>(x.ndim()) && o.ndim() == x.ndim()) {
      Shape filled = x;
      for (int d = 0; d < x.ndim(); ++d)
        if (filled[d] == 0) filled[d] = o[d] / t.reps[static_cast<size_t>(d)];
      AssignShape(attrs, in, 0, filled, "input");
    }
  }
  if (!(*in)[0].known()) return false;
  const TileDims t = PadTile(attrs, (*in)[0]);
  std::vector<int64_t> dims(t.in.size());
  const std::string label = OpLabel(attrs);
  for (size_t d = 0; d < dims.size(); ++d) dims[d] = MulDims(t.in[d], t.reps[d], label);
  AssignShape(attrs, out, 0, Shape(dims), "output");
  return true;
}

bool RepeatShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  CheckArity(attrs, in, 1);
  const auto& p = ParamsOf<RepeatParam>(attrs);
  const Shape& o = (*out)[0];
  if (p.axis && (*in)[0].ndim() > 0 && o.known() && o.ndim() == (*in)[0].ndim()) {
    const int axis = RepeatAxis(attrs, o.ndim());
    Shape filled = o;
    filled[axis] = o[axis] / p.repeats;
    Shape x = (*in)[0];
    for (int d = 0; d < x.ndim(); ++d)
      if (x[d] == 0) x[d] = filled[d];
    AssignShape(attrs, in, 0, x, "input");
  }
  const Shape& x = (*in)[0];
  if (!x.known()) return false;
  const std::string label = OpLabel(attrs);
  if (!p.axis) {
    const int64_t n = x.CheckedSize();
    TS_CHECK(n >= 0) << label << ": input shape " << x << " has more elements than 64 bits count";
    AssignShape(attrs, out, 0, Shape{MulDims(n, p.repeats, label)}, "output");
  } else {
    Shape s = x;
    const int axis = RepeatAxis(attrs, x.ndim());
    s[axis] = MulDims(s[axis], p.repeats, label);
    AssignShape(attrs, out, 0, s, "output");
  }
  return true;
}

bool FlipShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  CheckArity(attrs, in, 1);
  const bool ok = SameShapeAll(attrs, in, out);
  if ((*in)[0].ndim() > 0) FlipAxes(attrs, (*in)[0].ndim());  // axis errors at the call
  return ok;
}

// Backward of tile/repeat: output = shape of the forward input (input 1).
bool SumBackShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  CheckArity(attrs, in, 2);
  AssignShape(attrs, out, 0, (*in)[1], "output");
  return (*out)[0].known() && (*in)[0].known();
}

bool FirstInputType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  AssignType(attrs, out, 0, (*in)[0], "output");
  AssignType(attrs, in, 0, (*out)[0], "input");
  return (*out)[0] != DType::kUnknown;
}

std::vector<std::string> DataName(const NodeAttrs&) {
  return {"data"};
}

}  // namespace

TS_REGISTER_OP(tile)
    .describe(R"(Repeats the whole array `reps` times along each axis.

tile([[1, 2]], reps=(2, 2)) = [[1, 2, 1, 2], [1, 2, 1, 2]].)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<TileParam>)
    .add_argument("data", "NDArray", "Input array.")
    .add_arguments(TileParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataName)
    .set_attr<FInferShape>("FInferShape", TileShape)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
    .set_attr<FCompute>(kFComputeCPU, TileCompute<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      return MakeGradNode("_backward_tile", n, {og[0], n->inputs[0]});
    });

TS_REGISTER_OP(repeat)
    .describe(R"(Repeats each element `repeats` times along `axis`.

repeat([[1, 2], [3, 4]], repeats=2, axis=1) = [[1, 1, 2, 2], [3, 3, 4, 4]];
without axis the result is flat: [1, 1, 2, 2, 3, 3, 4, 4].)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<RepeatParam>)
    .add_argument("data", "NDArray", "Input array.")
    .add_arguments(RepeatParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataName)
    .set_attr<FInferShape>("FInferShape", RepeatShape)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
    .set_attr<FCompute>(kFComputeCPU, RepeatCompute<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      return MakeGradNode("_backward_repeat", n, {og[0], n->inputs[0]});
    });

TS_REGISTER_OP(flip)
    .add_alias("reverse")
    .describe(R"(Reverses the order of elements along the given axes.

flip([[1, 2], [3, 4]], axis=(1)) = [[2, 1], [4, 3]].)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<FlipParam>)
    .add_argument("data", "NDArray", "Input array.")
    .add_arguments(FlipParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataName)
    .set_attr<FInferShape>("FInferShape", FlipShape)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
    .set_attr<FCompute>(kFComputeCPU, FlipCompute<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      return MakeGradNode("flip", n, {og[0]});
    });

TS_REGISTER_OP(_backward_tile)
    .describe(
        "Gradient of tile: the output gradient (input 0) summed over the repetitions, in the "
        "shape of the forward input (input 1, read only for its shape).")
    .set_num_inputs(2)
    .set_attr_parser(ParamParser<TileParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", SumBackShape)
    .set_attr<FInferType>("FInferType", FirstInputType)
    .set_attr<FCompute>(kFComputeCPU, TileBackwardCompute<cpu>);

TS_REGISTER_OP(_backward_repeat)
    .describe(
        "Gradient of repeat: the output gradient (input 0) summed over the repetitions, in the "
        "shape of the forward input (input 1, read only for its shape).")
    .set_num_inputs(2)
    .set_attr_parser(ParamParser<RepeatParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", SumBackShape)
    .set_attr<FInferType>("FInferType", FirstInputType)
    .set_attr<FCompute>(kFComputeCPU, RepeatBackwardCompute<cpu>);

}  // namespace tessera::op
