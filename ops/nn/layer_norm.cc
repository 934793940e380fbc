// LayerNorm, InstanceNorm and GroupNorm: normalisation over one axis
// (LayerNorm), over the spatial positions of each sample and channel
// (InstanceNorm) or of each sample and group of channels (GroupNorm), then a
// learned scale (gamma) and shift (beta). Kernels in norm_groups-inl.h.
#include "engine/op/op_attr_types.h"
#include "engine/op/params.h"
#include "ops/nn/layer_norm-inl.h"
#include "ops/nn/nn_common.h"
#include "ops/nn/norm_groups-inl.h"

namespace tessera::op {

namespace {

// The backward's per-group statistics on the GPU (the CPU keeps them in a vector).
std::vector<ResourceRequest> GroupStatsSpace(const NodeAttrs&) {
  return {ResourceRequest::kTempSpace};
}

std::vector<std::string> DataGammaBeta(const NodeAttrs&) {
  return {"data", "gamma", "beta"};
}

// LayerNorm's and GroupNorm's outputs: the mean and the standard deviation
// are hidden unless output_mean_var.
std::vector<std::string> OutputMeanStd(const NodeAttrs&) {
  return {"output", "mean", "std"};
}
template <typename P>
uint32_t VisibleOutputs(const NodeAttrs& attrs) {
  return ParamsOf<P>(attrs).output_mean_var ? 3u : 1u;
}

bool LayerNormShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known() && (*out)[0].known()) (*in)[0] = (*out)[0];
  const Shape& s = (*in)[0];
  if (!s.known()) return false;
  int axis = 0;
  const norm::Geom g = LayerGeom(attrs, s, &axis);
  AssignNamed(attrs, in, 1, Shape{g.n}, "gamma", "one per element of the normalised axis");
  AssignNamed(attrs, in, 2, Shape{g.n}, "beta", "one per element of the normalised axis");
  AssignShape(attrs, out, 0, s, "output");
  Shape stat = s;
  stat[axis] = 1;
  AssignShape(attrs, out, 1, stat, "output");
  AssignShape(attrs, out, 2, stat, "output");
  return true;
}

bool InstanceNormShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known() && (*out)[0].known()) (*in)[0] = (*out)[0];
  const Shape& s = (*in)[0];
  if (!s.known()) return false;
  InstanceGeom(attrs, s);
  AssignNamed(attrs, in, 1, Shape{s[1]}, "gamma", "one per channel");
  AssignNamed(attrs, in, 2, Shape{s[1]}, "beta", "one per channel");
  AssignShape(attrs, out, 0, s, "output");
  return true;
}

bool GroupNormShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known() && (*out)[0].known()) (*in)[0] = (*out)[0];
  const Shape& s = (*in)[0];
  if (!s.known()) return false;
  GroupGeom(attrs, s);
  AssignNamed(attrs, in, 1, Shape{s[1]}, "gamma", "one per channel");
  AssignNamed(attrs, in, 2, Shape{s[1]}, "beta", "one per channel");
  AssignShape(attrs, out, 0, s, "output");
  const Shape stat{s[0], ParamsOf<GroupNormParam>(attrs).num_groups};
  AssignShape(attrs, out, 1, stat, "output");
  AssignShape(attrs, out, 2, stat, "output");
  return true;
}

// Inputs: output gradient, data, gamma. gamma has the shape the forward
// op's shape function gives it for the data: the kernel reads it so.
using ShapeFn = bool (*)(const NodeAttrs&, std::vector<Shape>*, std::vector<Shape>*);
bool NormBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out,
                       ShapeFn forward) {
  AssignShape(attrs, in, 0, (*in)[1], "input");
  if ((*in)[1].known()) {
    std::vector<Shape> forward_in{(*in)[1], Shape(), Shape()}, forward_out(3);  // LayerNorm: 3
    forward(attrs, &forward_in, &forward_out);
    AssignShape(attrs, in, 2, forward_in[1], "input");
  }
  AssignShape(attrs, out, 0, (*in)[1], "output");
  AssignShape(attrs, out, 1, (*in)[2], "output");
  AssignShape(attrs, out, 2, (*in)[2], "output");
  return (*in)[1].known() && (*in)[2].known();
}

template <const char* kBackward>
std::vector<NodeEntry> NormGrad(const NodePtr& n, const std::vector<NodeEntry>& ograds) {
  return MakeGradNode(kBackward, n, {ograds[0], n->inputs[0], n->inputs[1]});
}

constexpr char kLayerBackward[] = "_backward_LayerNorm";
constexpr char kInstanceBackward[] = "_backward_InstanceNorm";
constexpr char kGroupBackward[] = "_backward_GroupNorm";

}  // namespace

TS_REGISTER_OP(LayerNorm)
    .describe(
        R"(Layer normalisation: along `axis`, out = gamma * (x - mean) / sqrt(var + eps) + beta.

gamma and beta have one value per element of the axis. With
output_mean_var=True the mean and the standard deviation (the axis kept with
size 1) are outputs 2 and 3.)")
    .set_num_inputs(3)
    .set_num_outputs(3)
    .set_attr_parser(ParamParser<LayerNormParam>)
    .add_argument("data", "NDArray", "The input.")
    .add_argument("gamma", "NDArray", "Scale, one per element of the axis.")
    .add_argument("beta", "NDArray", "Shift, one per element of the axis.")
    .add_arguments(LayerNormParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataGammaBeta)
    .set_attr<FListOutputNames>("FListOutputNames", OutputMeanStd)
    .set_attr<FNumVisibleOutputs>("FNumVisibleOutputs", VisibleOutputs<LayerNormParam>)
    .set_attr<FInferShape>("FInferShape", LayerNormShape)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, NormForward<cpu, true>)
    .set_attr<FGradient>("FGradient", NormGrad<kLayerBackward>);

TS_REGISTER_OP(_backward_LayerNorm)
    .describe("Gradient of LayerNorm: (out_grad, data, gamma) -> (data, gamma, beta) gradients.")
    .set_num_inputs(3)
    .set_num_outputs(3)
    .set_attr_parser(ParamParser<LayerNormParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& a, std::vector<Shape>* in, std::vector<Shape>* out) {
                             return NormBackwardShape(a, in, out, LayerNormShape);
                           })
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FResourceRequest>("FResourceRequest", GroupStatsSpace)
    .set_attr<FCompute>(kFComputeCPU, NormBackward<cpu, true>);

TS_REGISTER_OP(InstanceNorm)
    .describe(
        R"(Instance normalisation: for each sample and channel of data (batch, channel, spatial...),
out = gamma * (x - mean) / sqrt(var + eps) + beta over the spatial positions.

gamma and beta have one value per channel.)")
    .set_num_inputs(3)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<InstanceNormParam>)
    .add_argument("data", "NDArray", "The input, (batch, channel, spatial...).")
    .add_argument("gamma", "NDArray", "Scale, one per channel.")
    .add_argument("beta", "NDArray", "Shift, one per channel.")
    .add_arguments(InstanceNormParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataGammaBeta)
    .set_attr<FInferShape>("FInferShape", InstanceNormShape)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, NormForward<cpu, false>)
    .set_attr<FGradient>("FGradient", NormGrad<kInstanceBackward>);

TS_REGISTER_OP(_backward_InstanceNorm)
    .describe("Gradient of InstanceNorm: (out_grad, data, gamma) -> (data, gamma, beta) gradients.")
    .set_num_inputs(3)
    .set_num_outputs(3)
    .set_attr_parser(ParamParser<InstanceNormParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& a, std::vector<Shape>* in, std::vector<Shape>* out) {
                             return NormBackwardShape(a, in, out, InstanceNormShape);
                           })
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FResourceRequest>("FResourceRequest", GroupStatsSpace)
    .set_attr<FCompute>(kFComputeCPU, NormBackward<cpu, false>);

TS_REGISTER_OP(GroupNorm)
    .describe(
        R"(Group normalisation (Wu and He, 2018): the channels of data (batch, channel,
spatial...) split into num_groups groups; for each sample and group,
out = gamma * (x - mean) / sqrt(var + eps) + beta over the group's channels
and spatial positions.

gamma and beta have one value per channel. With output_mean_var=True the
mean and the standard deviation, (batch, num_groups), are outputs 2 and 3.
num_groups=1 normalises each sample as LayerNorm over all but the batch axis
would; num_groups=channels is InstanceNorm.)")
    .set_num_inputs(3)
    .set_num_outputs(3)
    .set_attr_parser(ParamParser<GroupNormParam>)
    .add_argument("data", "NDArray", "The input, (batch, channel, spatial...).")
    .add_argument("gamma", "NDArray", "Scale, one per channel.")
    .add_argument("beta", "NDArray", "Shift, one per channel.")
    .add_arguments(GroupNormParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataGammaBeta)
    .set_attr<FListOutputNames>("FListOutputNames", OutputMeanStd)
    .set_attr<FNumVisibleOutputs>("FNumVisibleOutputs", VisibleOutputs<GroupNormParam>)
    .set_attr<FInferShape>("FInferShape", GroupNormShape)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, GroupNormForward<cpu>)
    .set_attr<FGradient>("FGradient", NormGrad<kGroupBackward>);

TS_REGISTER_OP(_backward_GroupNorm)
    .describe("Gradient of GroupNorm: (out_grad, data, gamma) -> (data, gamma, beta) gradients.")
    .set_num_inputs(3)
    .set_num_outputs(3)
    .set_attr_parser(ParamParser<GroupNormParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& a, std::vector<Shape>* in, std::vector<Shape>* out) {
                             return NormBackwardShape(a, in, out, GroupNormShape);
                           })
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FResourceRequest>("FResourceRequest", GroupStatsSpace)
    .set_attr<FCompute>(kFComputeCPU, GroupNormBackward<cpu>);

}  // namespace tessera::op
