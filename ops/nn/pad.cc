// Pad: pads an array with a constant, the edge values or their reflection.
// The backward sends each output gradient to the input element it came from
// (nowhere for constant padding), summing where edge and reflect padding
// repeat an element.
#include "engine/op/op_attr_types.h"
#include "engine/op/params.h"
#include "ops/nn/nn_common.h"
#include "ops/nn/pad-inl.h"

namespace tessera::op {

namespace {

// Checks pad_width against `s`: two values per axis, none negative, and
// reflection narrower than the axis.
void CheckPad(const NodeAttrs& attrs, const Shape& s) {
  const auto& p = ParamsOf<PadParam>(attrs);
  TS_CHECK(static_cast<int>(p.pad_width.size()) == 2 * s.ndim())
      << OpLabel(attrs) << ": pad_width has " << p.pad_width.size() << " values, the input " << s
      << " needs " << 2 * s.ndim() << " (before and after, per axis)";
  for (int d = 0; d < s.ndim(); ++d) {
    const int64_t b = p.pad_width[2 * d], a = p.pad_width[2 * d + 1];
    TS_CHECK(b >= 0 && a >= 0) << OpLabel(attrs) << ": pad_width must not be negative";
    if (p.mode == kReflect) {
      TS_CHECK(b < s[d] && a < s[d]) << OpLabel(attrs) << ": reflect padding of " << std::max(b, a)
                                     << " on axis " << d << " needs more than that many elements, "
                                     << "the input " << s << " has " << s[d];
    }
  }
}

bool PadShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& s = (*in)[0];
  if (!s.known()) return false;
  CheckPad(attrs, s);
  const auto& p = ParamsOf<PadParam>(attrs);
  Shape o = s;
  for (int d = 0; d < s.ndim(); ++d) o[d] += p.pad_width[2 * d] + p.pad_width[2 * d + 1];
  AssignShape(attrs, out, 0, o, "output");
  return true;
}

bool PadBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& g = (*in)[0];
  if (!g.known()) return false;
  const auto& p = ParamsOf<PadParam>(attrs);
  TS_CHECK(static_cast<int>(p.pad_width.size()) == 2 * g.ndim())
      << OpLabel(attrs) << ": pad_width does not match the gradient " << g;
  Shape s = g;
  for (int d = 0; d < g.ndim(); ++d) s[d] -= p.pad_width[2 * d] + p.pad_width[2 * d + 1];
  AssignShape(attrs, out, 0, s, "output");
  return true;
}

}  // namespace

TS_REGISTER_OP(Pad)
    .add_alias("pad")
    .describe(R"(Pads every axis by pad_width = (before_1, after_1, ..., before_n, after_n).

mode 'constant' fills with constant_value; 'edge' repeats the border
element; 'reflect' mirrors: Pad([1, 2, 3], pad_width=(2, 1), mode='reflect')
= [3, 2, 1, 2, 3, 2].)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<PadParam>)
    .add_argument("data", "NDArray", "The array to pad.")
    .add_arguments(PadParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataInputName)
    .set_attr<FInferShape>("FInferShape", PadShape)
    .set_attr<FInferType>("FInferType", SameTypeAll)
    .set_attr<FCompute>(kFComputeCPU, PadForward<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& g) {
      return MakeGradNode("_backward_Pad", n, {g[0]});
    });

TS_REGISTER_OP(_backward_Pad)
    .describe("Gradient of Pad: each output gradient summed into its source element.")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<PadParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", PadBackwardShape)
    .set_attr<FInferType>("FInferType", SameTypeAll)
    .set_attr<FCompute>(kFComputeCPU, PadBackward<cpu>);

}  // namespace tessera::op
