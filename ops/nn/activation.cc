// Activation (relu, sigmoid, tanh, softrelu, softsign) and LeakyReLU (leaky,
// prelu, elu, selu, gelu), with their backward ops: the registrations, the
// shape and type rules; the computes are activation-inl.h's, with xpu = cpu.
#include "ops/nn/activation-inl.h"

namespace tessera::op {

namespace {

// ---- Activation.

const ActivationParam& ActParams(const NodeAttrs& attrs) {
  return ParamsOf<ActivationParam>(attrs);
}

bool ActInferType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const bool ok = SameTypeAll(attrs, in, out);
  CheckFloatTypes(attrs, *in, *out);
  return ok;
}

// Inputs: ograd, out[, data for softsign].
uint32_t ActBackwardInputs(const NodeAttrs& attrs) {
  return ActParams(attrs).act_type == kActSoftSign ? 3 : 2;
}

std::vector<NodeEntry> ActGrad(const NodePtr& n, const std::vector<NodeEntry>& ograds) {
  std::vector<NodeEntry> in{ograds[0], NodeEntry{n, 0, 0}};
  if (ActParams(n->attrs).act_type == kActSoftSign) in.push_back(n->inputs[0]);
  return MakeGradNode("_backward_Activation", n, std::move(in));
}

// ---- LeakyReLU.

void LeakyParser(NodeAttrs* attrs) {
  ParamParser<LeakyReLUParam>(attrs);
  const auto& p = ParamsOf<LeakyReLUParam>(*attrs);
  TS_CHECK(p.act_type != kLeakyRrelu || p.lower_bound <= p.upper_bound)
      << "LeakyReLU" << (attrs->name.empty() ? "" : " (node " + attrs->name + ")")
      << ": rrelu's lower_bound " << p.lower_bound << " exceeds upper_bound " << p.upper_bound;
}

const LeakyReLUParam& LeakyParams(const NodeAttrs& attrs) {
  return ParamsOf<LeakyReLUParam>(attrs);
}

// rrelu keeps each element's slope as a hidden second output (its mask),
// drawn from the op's random stream in training.
bool IsRrelu(const NodeAttrs& attrs) {
  return LeakyParams(attrs).act_type == kLeakyRrelu;
}

uint32_t LeakyNumOutputs(const NodeAttrs& attrs) {
  return IsRrelu(attrs) ? 2 : 1;
}

bool IsPrelu(const NodeAttrs& attrs) {
  return LeakyParams(attrs).act_type == kLeakyPrelu;
}

uint32_t LeakyNumInputs(const NodeAttrs& attrs) {
  return IsPrelu(attrs) ? 2 : 1;
}

std::vector<std::string> LeakyInputNames(const NodeAttrs& attrs) {
  if (IsPrelu(attrs)) return {"data", "gamma"};
  return {"data"};
}

bool LeakyShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == LeakyNumInputs(attrs))
      << OpLabel(attrs) << ": expects " << LeakyNumInputs(attrs) << " inputs, got " << in->size();
  // The output has the data's shape, both ways.
  AssignNamed(attrs, in, 0, (*out)[0], "data", "the output's shape");
  AssignShape(attrs, out, 0, (*in)[0], "output");
  if (IsRrelu(attrs)) AssignShape(attrs, out, 1, (*in)[0], "mask");
  if (IsPrelu(attrs)) {
    const Shape& d = (*in)[0];
    Shape& gamma = (*in)[1];
    if (d.ndim() > 0) {
      const int axis = d.ndim() >= 2 ? 1 : 0;
      if (gamma.ndim() == 0 && d[axis] > 0) gamma = Shape{d[axis]};
      if (gamma.known() && d[axis] > 0) {
        TS_CHECK(gamma.ndim() == 1 && (gamma[0] == d[axis] || gamma[0] == 1))
            << OpLabel(attrs) << ": gamma has shape " << gamma << " but prelu needs (" << d[axis]
            << ",) (one slope per channel, axis " << axis << " of data " << d << ") or (1,)";
      }
    }
  }
  return AllKnown(*in) && AllKnown(*out);
}

bool LeakyInferType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const bool ok = SameTypeAll(attrs, in, out);
  CheckFloatTypes(attrs, *in, *out);
  return ok;
}

std::vector<NodeEntry> LeakyGrad(const NodePtr& n, const std::vector<NodeEntry>& ograds) {
  std::vector<NodeEntry> in{ograds[0]};
  in.insert(in.end(), n->inputs.begin(), n->inputs.end());
  if (IsRrelu(n->attrs)) in.push_back(NodeEntry{n, 1, 0});  // the slopes drawn
  return MakeGradNode("_backward_LeakyReLU", n, std::move(in));
}

bool LeakyBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  AssignShape(attrs, in, 0, (*in)[1], "input");
  AssignShape(attrs, in, 1, (*in)[0], "input");
  if (IsRrelu(attrs)) {
    AssignShape(attrs, in, 2, (*in)[1], "mask");
    AssignShape(attrs, in, 1, (*in)[2], "input");
  }
  for (size_t i = 0; i < out->size(); ++i) AssignShape(attrs, out, i, (*in)[i + 1], "output");
  return AllKnown(*in) && AllKnown(*out);
}

std::vector<ResourceRequest> LeakyResources(const NodeAttrs& attrs) {
  if (IsRrelu(attrs)) return {ResourceRequest::kRandom};
  return {};
}

}  // namespace

TS_REGISTER_OP(Activation)
    .describe(R"(Applies an activation function elementwise.

act_type: relu max(x, 0); sigmoid 1 / (1 + exp(-x)); tanh; softrelu
log(1 + exp(x)) (softplus); softsign x / (1 + |x|). Floating-point types.

Example: Activation([-1, 0.5], act_type='relu') = [0, 0.5].)")
    .set_num_inputs(1)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<ActivationParam>)
    .add_argument("data", "NDArray", "The input array.")
    .add_arguments(ActivationParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataInputName)
    .set_attr<FInferShape>("FInferShape", ElemwiseShape<1, 1>)
    .set_attr<FInferType>("FInferType", ActInferType)
    .set_attr<FInplaceOption>("FInplaceOption", InplaceFirstInput)
    .set_attr<FCompute>(kFComputeCPU, ActForward<cpu>)
    .set_attr<FLayoutClasses>("FLayoutClasses", ElementwiseLayout)
    .set_attr<FGradient>("FGradient", ActGrad);

TS_REGISTER_OP(_backward_Activation)
    .describe("Gradient of Activation from its output. Inputs: ograd, out[, data for softsign].")
    .set_num_inputs(ActBackwardInputs)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<ActivationParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", ElemwiseShape<-1, 1>)
    .set_attr<FInferType>("FInferType", ElemwiseType<-1, 1>)
    .set_attr<FInplaceOption>("FInplaceOption", InplaceFirstInput)
    .set_attr<FCompute>(kFComputeCPU, ActBackward<cpu>)
    .set_attr<FLayoutClasses>("FLayoutClasses", ElementwiseLayout);

TS_REGISTER_OP(LeakyReLU)
    .describe(R"(Leaky rectified linear units and relatives, elementwise.

act_type: leaky x > 0 ? x : slope * x (the default, slope 0.25); prelu the
same with the learned slope `gamma` (shape (C,) along axis 1, one per channel,
or (1,)); elu x > 0 ? x : slope * (exp(x) - 1); selu
lambda * (x > 0 ? x : alpha * (exp(x) - 1)) with alpha = 1.6732632,
lambda = 1.0507010; gelu 0.5 * x * (1 + erf(x / sqrt(2))); rrelu
x > 0 ? x : a * x, a drawn per element from U(lower_bound, upper_bound) in
training and their mean otherwise (the slopes are a hidden second output).

Example: LeakyReLU([-2, 3], act_type='leaky', slope=0.1) = [-0.2, 3].)")
    .set_num_inputs(LeakyNumInputs)
    .set_num_outputs(LeakyNumOutputs)
    .set_attr_parser(LeakyParser)
    .set_attr<FNumVisibleOutputs>("FNumVisibleOutputs", [](const NodeAttrs&) { return 1u; })
    .set_attr<FResourceRequest>("FResourceRequest", LeakyResources)
    .add_argument("data", "NDArray", "The input array.")
    .add_argument("gamma", "NDArray", "prelu only: the slopes, (C,) or (1,).")
    .add_arguments(LeakyReLUParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", LeakyInputNames)
    .set_attr<FInferShape>("FInferShape", LeakyShape)
    .set_attr<FInferType>("FInferType", LeakyInferType)
    .set_attr<FCompute>(kFComputeCPU, LeakyForward<cpu>)
    .set_attr<FGradient>("FGradient", LeakyGrad);

TS_REGISTER_OP(_backward_LeakyReLU)
    .describe(
        "Gradient of LeakyReLU. Inputs: ograd, data[, gamma (prelu)][, the slopes (rrelu)]; "
        "outputs: the gradients of data[ and gamma].")
    .set_num_inputs([](const NodeAttrs& attrs) {
      return LeakyNumInputs(attrs) + (IsRrelu(attrs) ? 2 : 1);
    })
    .set_num_outputs(LeakyNumInputs)
    .set_attr_parser(LeakyParser)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", LeakyBackwardShape)
    .set_attr<FInferType>("FInferType", ElemwiseType<-1, -1>)
    .set_attr<FCompute>(kFComputeCPU, LeakyBackward<cpu>);

}  // namespace tessera::op
