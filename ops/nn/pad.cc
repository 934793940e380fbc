// Pad: pads an array with a constant, the edge values or their reflection.
// The backward sends each output gradient to the input element it came from
// (nowhere for constant padding), summing where edge and reflect padding
// repeat an element.
#include "engine/op/op_attr_types.h"
#include "engine/op/params.h"
#include "ops/nn/nn_common.h"

namespace tessera::op {

namespace {

enum PadMode { kConstant, kEdge, kReflect };

struct PadParam : Params<PadParam> {
  int mode = kConstant;
  std::vector<int64_t> pad_width;
  double constant_value = 0;
  static void Declare(ParamDecl<PadParam>& d) {
    d.field("mode", &PadParam::mode)
        .set_default(kConstant)
        .add_enum("constant", kConstant)
        .add_enum("edge", kEdge)
        .add_enum("reflect", kReflect)
        .describe(
            "'constant' fills with constant_value, 'edge' repeats the border, "
            "'reflect' mirrors the array at its border (without repeating it).");
    d.field("pad_width", &PadParam::pad_width)
        .describe("(before_1, after_1, ..., before_n, after_n): the padding of each axis.");
    d.field("constant_value", &PadParam::constant_value)
        .set_default(0.0)
        .describe("The value of constant padding.");
  }
};

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

// The input index output element `i` comes from, or -1 (constant padding).
int64_t Source(const PadParam& p, const Shape& in, const Shape& out, int64_t i) {
  int64_t src = 0;
  for (int d = 0; d < in.ndim(); ++d) {
    int64_t stride = 1;
    for (int e = d + 1; e < out.ndim(); ++e) stride *= out[e];
    int64_t c = (i / stride) % out[d] - p.pad_width[2 * d];
    const int64_t n = in[d];
    if (c < 0 || c >= n) {
      if (p.mode == kConstant) return -1;
      if (p.mode == kEdge)
        c = c < 0 ? 0 : n - 1;
      else
        c = c < 0 ? -c : 2 * (n - 1) - c;
    }
    src = src * n + c;
  }
  return src;
}

void PadForward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<PadParam>(attrs);
  SwitchDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* x = in[0].dptr<T>();
        T* y = out[0].dptr<T>();
        const T fill = static_cast<T>(p.constant_value);
        const int64_t n = out[0].Size();
        for (int64_t i = 0; i < n; ++i) {
          const int64_t s = Source(p, in[0].shape(), out[0].shape(), i);
          const T v = s < 0 ? fill : x[s];
          y[i] = req[0] == kAddTo
                     ? static_cast<T>(static_cast<AccType<T>>(y[i]) + static_cast<AccType<T>>(v))
                     : v;
        }
      },
      "Pad");
}

// (out_grad) -> data_grad; params as the forward's, the input shape from
// the gradient's shape minus the padding.
void PadBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<PadParam>(attrs);
  SwitchFloatDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = AccType<T>;
        std::vector<A> acc(static_cast<size_t>(out[0].Size()), A(0));
        const T* dy = in[0].dptr<T>();
        for (int64_t i = 0; i < in[0].Size(); ++i) {
          const int64_t s = Source(p, out[0].shape(), in[0].shape(), i);
          if (s >= 0) acc[s] += static_cast<A>(dy[i]);
        }
        T* dx = out[0].dptr<T>();
        for (size_t j = 0; j < acc.size(); ++j)
          dx[j] = static_cast<T>(req[0] == kAddTo ? static_cast<A>(dx[j]) + acc[j] : acc[j]);
      },
      "_backward_Pad");
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
    .set_attr<FCompute>(kFComputeCPU, PadForward)
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
    .set_attr<FCompute>(kFComputeCPU, PadBackward);

}  // namespace tessera::op
