// The sequence ops of MXNet: SequenceMask, SequenceLast and SequenceReverse
// on a batch of padded sequences, (time, batch, ...) or, with axis = 1 where
// MXNet allows it, (batch, time, ...). An optional second input,
// sequence_length (batch,), gives each row's length (use_sequence_length);
// without it every row is full. The lengths get no gradient.
#include <string>
#include <vector>

#include "ops/nn/nn_common.h"
#include "ops/nn/sequence_ops-inl.h"

namespace tessera::op {

namespace {

uint32_t SeqNumInputs(const NodeAttrs& attrs) {
  return SeqParams(attrs).use_sequence_length ? 2 : 1;
}

std::vector<std::string> SeqInputNames(const NodeAttrs& attrs) {
  if (SeqParams(attrs).use_sequence_length) return {"data", "sequence_length"};
  return {"data"};
}

// The GPU's copy of the lengths (the CPU reads them in place).
std::vector<ResourceRequest> SeqTempSpace(const NodeAttrs&) {
  return {ResourceRequest::kTempSpace};
}

bool SeqCheckData(const NodeAttrs& attrs, std::vector<Shape>* in) {
  TS_CHECK(in->size() == SeqNumInputs(attrs))
      << OpLabel(attrs) << ": expects " << SeqNumInputs(attrs) << " inputs, got " << in->size();
  const Shape& d = (*in)[0];
  if (d.ndim() == 0) return false;
  TS_CHECK(d.ndim() >= 2) << OpLabel(attrs)
                          << ": data must have a time and a batch axis, got shape " << d;
  const int axis = TimeAxis(attrs, d);
  if (SeqParams(attrs).use_sequence_length && d[1 - axis] > 0)
    AssignNamed(attrs, in, 1, Shape{d[1 - axis]}, "sequence_length", "(batch,)");
  return d.known();
}

bool SeqSameShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!SeqCheckData(attrs, in)) return false;
  AssignShape(attrs, out, 0, (*in)[0], "output");
  return AllKnown(*in);
}

bool SeqLastShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!SeqCheckData(attrs, in)) return false;
  const Shape& d = (*in)[0];
  std::vector<int64_t> dims{d[1 - TimeAxis(attrs, d)]};
  for (int i = 2; i < d.ndim(); ++i) dims.push_back(d[i]);
  AssignShape(attrs, out, 0, Shape(dims), "output");
  return AllKnown(*in);
}

// data's dtype for the output; the lengths may have any numeric type.
bool SeqType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  std::vector<DType> data{(*in)[0]};
  const bool ok = SameTypeAll(attrs, &data, out);
  (*in)[0] = data[0];
  if (in->size() > 1 && (*in)[1] == DType::kUnknown) (*in)[1] = data[0];
  return ok && (in->size() < 2 || (*in)[1] != DType::kUnknown);
}

// Gradient rule: one backward node for data; zeros for the lengths.
struct SeqGrad {
  const char* backward;
  bool needs_data;
  std::vector<NodeEntry> operator()(const NodePtr& n, const std::vector<NodeEntry>& og) const {
    std::vector<NodeEntry> inputs{og[0]};
    if (needs_data) inputs.push_back(n->inputs[0]);
    if (n->inputs.size() > 1) inputs.push_back(n->inputs[1]);
    std::vector<NodeEntry> r = MakeGradNode(backward, n, std::move(inputs));
    if (n->inputs.size() > 1)
      r.push_back(
          MakeNode("zeros_like", n->attrs.name + "_sequence_length_zerograd", {n->inputs[1]}));
    return r;
  }
};

bool ReverseShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if ((*in)[0].ndim() > 0) {
    TS_CHECK(TimeAxis(attrs, (*in)[0]) == 0)
        << OpLabel(attrs) << ": only axis 0 (time first) is supported, as in MXNet";
  }
  return SeqSameShape(attrs, in, out);
}

// ograd must have the shape SequenceLast gives data (the kernel reads it so).
bool LastBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  std::vector<Shape> fwd_in(in->begin() + 1, in->end()), fwd_out(1);
  const bool known = SeqLastShape(attrs, &fwd_in, &fwd_out);
  if (fwd_out[0].known()) AssignShape(attrs, in, 0, fwd_out[0], "ograd");
  AssignShape(attrs, out, 0, (*in)[1], "output");
  return known && (*in)[0].known();
}

bool BackwardType(const NodeAttrs&, std::vector<DType>* in, std::vector<DType>* out) {
  if ((*out)[0] == DType::kUnknown) (*out)[0] = (*in)[0];
  return (*in)[0] != DType::kUnknown;
}

uint32_t LastBackwardNumInputs(const NodeAttrs& attrs) {
  return SeqNumInputs(attrs) + 1;
}

}  // namespace

TS_REGISTER_OP(SequenceMask)
    .describe(R"(Sets the steps of each sequence past its length to `value`, as MXNet.
data is (time, batch, ...) (axis=1 in Lua: 1-based; axis=2 for batch first);
with use_sequence_length the second input gives each row's length, else
nothing is masked. The gradient passes through the kept steps.)")
    .set_num_inputs(SeqNumInputs)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<SequenceParam>)
    .add_argument("data", "NDArray", "Padded sequences, (time, batch, ...) or (batch, time, ...).")
    .add_argument("sequence_length", "NDArray", "Each row's length, (batch,).")
    .add_arguments(SequenceParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", SeqInputNames)
    .set_attr<FInferShape>("FInferShape", SeqSameShape)
    .set_attr<FInferType>("FInferType", SeqType)
    .set_attr<FResourceRequest>("FResourceRequest", SeqTempSpace)
    .set_attr<FCompute>(kFComputeCPU, MaskCompute<cpu>)
    .set_attr<FGradient>("FGradient", SeqGrad{"_backward_SequenceMask", false});

TS_REGISTER_OP(_backward_SequenceMask)
    .describe("Gradient of SequenceMask: the output gradient, zero past each row's length.")
    .set_num_inputs(SeqNumInputs)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<SequenceParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", SeqSameShape)
    .set_attr<FInferType>("FInferType", BackwardType)
    .set_attr<FResourceRequest>("FResourceRequest", SeqTempSpace)
    .set_attr<FCompute>(kFComputeCPU, MaskCompute<cpu>);

TS_REGISTER_OP(SequenceLast)
    .describe(R"(The last step of each sequence, as MXNet: out[n] = data[len[n], n] (1-based
len, the row's length; the last step without use_sequence_length). data is
(time, batch, ...) or, with the second axis as time, (batch, time, ...);
the output is (batch, ...).)")
    .set_num_inputs(SeqNumInputs)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<SequenceParam>)
    .add_argument("data", "NDArray", "Padded sequences, (time, batch, ...) or (batch, time, ...).")
    .add_argument("sequence_length", "NDArray", "Each row's length, (batch,), from 1.")
    .add_arguments(SequenceParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", SeqInputNames)
    .set_attr<FInferShape>("FInferShape", SeqLastShape)
    .set_attr<FInferType>("FInferType", SeqType)
    .set_attr<FResourceRequest>("FResourceRequest", SeqTempSpace)
    .set_attr<FCompute>(kFComputeCPU, LastCompute<cpu>)
    .set_attr<FGradient>("FGradient", SeqGrad{"_backward_SequenceLast", true});

TS_REGISTER_OP(_backward_SequenceLast)
    .describe("Gradient of SequenceLast. Inputs: ograd, data, [sequence_length].")
    .set_num_inputs(LastBackwardNumInputs)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<SequenceParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", LastBackwardShape)
    .set_attr<FInferType>("FInferType", BackwardType)
    .set_attr<FResourceRequest>("FResourceRequest", SeqTempSpace)
    .set_attr<FCompute>(kFComputeCPU, LastBackward<cpu>);

TS_REGISTER_OP(SequenceReverse)
    .describe(R"(Reverses the first len[n] steps of each sequence, as MXNet; steps past a
row's length stay in place. data is (time, batch, ...) (only time first, as
in MXNet); without use_sequence_length every row is reversed whole.)")
    .set_num_inputs(SeqNumInputs)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<SequenceParam>)
    .add_argument("data", "NDArray", "Padded sequences, (time, batch, ...).")
    .add_argument("sequence_length", "NDArray", "Each row's length, (batch,).")
    .add_arguments(SequenceParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", SeqInputNames)
    .set_attr<FInferShape>("FInferShape", ReverseShape)
    .set_attr<FInferType>("FInferType", SeqType)
    .set_attr<FResourceRequest>("FResourceRequest", SeqTempSpace)
    .set_attr<FCompute>(kFComputeCPU, ReverseCompute<cpu>)
    .set_attr<FGradient>("FGradient", SeqGrad{"_backward_SequenceReverse", false});

TS_REGISTER_OP(_backward_SequenceReverse)
    .describe("Gradient of SequenceReverse: the same reversal of the output gradient.")
    .set_num_inputs(SeqNumInputs)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<SequenceParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", ReverseShape)
    .set_attr<FInferType>("FInferType", BackwardType)
    .set_attr<FResourceRequest>("FResourceRequest", SeqTempSpace)
    .set_attr<FCompute>(kFComputeCPU, ReverseCompute<cpu>);

}  // namespace tessera::op
