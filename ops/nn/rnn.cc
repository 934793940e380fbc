// RNN: MXNet's fused recurrent layer (rnn_relu, rnn_tanh, lstm, gru; layers,
// bidirectional, dropout between layers, sequence lengths): parameters,
// shape and type inference, the gradient rule and registration. Layouts are
// in rnn-inl.h, the loop both devices run in rnn_loop-inl.h, the CPU kernels
// in rnn_cpu.cc and the GPU's in rnn.cu.
#include <string>
#include <vector>

#include "ops/nn/rnn-inl.h"

namespace tessera::op {

void RNNParam::Declare(ParamDecl<RNNParam>& d) {
  d.field("state_size", &RNNParam::state_size)
      .set_lower_bound(1)
      .describe("Size of the hidden state (H).");
  d.field("num_layers", &RNNParam::num_layers).set_lower_bound(1).describe("Number of layers.");
  d.field("bidirectional", &RNNParam::bidirectional)
      .set_default(false)
      .describe("Whether each layer also runs over the sequence backwards (outputs 2*H wide).");
  d.field("mode", &RNNParam::mode)
      .add_enum("rnn_relu", kRnnRelu)
      .add_enum("rnn_tanh", kRnnTanh)
      .add_enum("lstm", kLstm)
      .add_enum("gru", kGru)
      .describe("The cell: plain RNN with relu or tanh, LSTM, or GRU.");
  d.field("p", &RNNParam::p)
      .set_default(0.f)
      .set_range(0.f, 1.f)
      .describe("Dropout rate on the outputs of every layer but the last, in training.");
  d.field("state_outputs", &RNNParam::state_outputs)
      .set_default(false)
      .describe("Whether to return the final states (hy, and cy for LSTM) as well as the output.");
  d.field("projection_size", &RNNParam::projection_size)
      .set_default(std::nullopt)
      .describe(
          "LSTM only: project h to this size with a W_h2r (projection_size, state_size) after "
          "each step (LSTMP); the projection recurs and is the output.");
  d.field("lstm_state_clip_min", &RNNParam::lstm_state_clip_min)
      .set_default(std::nullopt)
      .describe("LSTM only: lower bound the cell state is clipped to after each step.");
  d.field("lstm_state_clip_max", &RNNParam::lstm_state_clip_max)
      .set_default(std::nullopt)
      .describe("LSTM only: upper bound the cell state is clipped to after each step.");
  d.field("lstm_state_clip_nan", &RNNParam::lstm_state_clip_nan)
      .set_default(false)
      .describe("LSTM with clipping: a NaN cell state becomes lstm_state_clip_min.");
  d.field("use_sequence_length", &RNNParam::use_sequence_length)
      .set_default(false)
      .describe(
          "Whether a last input, sequence_length (batch,), gives each row's length: steps past it "
          "output zeros and leave the state unchanged.");
}

namespace {

uint32_t RnnNumInputs(const NodeAttrs& attrs) {
  const RNNParam& p = RnnParams(attrs);
  return 3 + (p.mode == kLstm ? 1 : 0) + (p.use_sequence_length ? 1 : 0);
}

// out, hy, [cy], reserve: the states are always computed, shown with
// state_outputs; the reserve is never shown.
uint32_t RnnNumOutputs(const NodeAttrs& attrs) {
  return RnnHasCell(attrs) ? 4 : 3;
}

uint32_t RnnNumOutputGrads(const RNNParam& p) {
  return p.state_outputs ? (p.mode == kLstm ? 3 : 2) : 1;
}

std::vector<std::string> RnnInputNames(const NodeAttrs& attrs) {
  std::vector<std::string> names{"data", "parameters", "state"};
  if (RnnHasCell(attrs)) names.push_back("state_cell");
  if (RnnParams(attrs).use_sequence_length) names.push_back("sequence_length");
  return names;
}

std::vector<std::string> RnnOutputNames(const NodeAttrs& attrs) {
  if (RnnHasCell(attrs)) return {"output", "state", "state_cell", "reserve"};
  return {"output", "state", "reserve"};
}

void CheckSupported(const NodeAttrs& attrs) {
  const RNNParam& p = RnnParams(attrs);
  if (!p.projection_size) return;
  TS_CHECK(p.mode == kLstm) << OpLabel(attrs) << ": projection_size is for mode lstm only";
  TS_CHECK(*p.projection_size >= 1 && *p.projection_size < p.state_size)
      << OpLabel(attrs) << ": projection_size " << *p.projection_size
      << " must be within [1, state_size) (state_size " << p.state_size << ")";
}

bool RnnShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  CheckSupported(attrs);
  const RNNParam& p = RnnParams(attrs);
  TS_CHECK(in->size() == RnnNumInputs(attrs))
      << OpLabel(attrs) << ": expects " << RnnNumInputs(attrs) << " inputs, got " << in->size();
  const Shape& data = (*in)[0];
  if (data.ndim() == 0) return false;
  TS_CHECK(data.ndim() == 3) << OpLabel(attrs)
                             << ": data must be 3-D (sequence, batch, features), layout TNC; "
                                "got shape "
                             << data;
  if (!data.known()) return false;
  TS_CHECK(data[0] > 0 && data[1] > 0 && data[2] > 0)
      << OpLabel(attrs) << ": data of shape " << data << " has an empty axis";
  const RnnGeom g(p, data[0], data[1], data[2]);
  const std::string rule = "data " + data.ToString() + ", mode " +
                           std::string(p.mode == kLstm  ? "lstm"
                                       : p.mode == kGru ? "gru"
                                                        : "rnn") +
                           ", state_size " + std::to_string(g.H) +
                           (g.P > 0 ? ", projection_size " + std::to_string(g.P) : "") +
                           ", num_layers " + std::to_string(g.L) +
                           (g.D == 2 ? ", bidirectional" : "");
  AssignNamed(attrs, in, 1, Shape{g.ParamSize()}, "parameters", rule.c_str());
  const Shape state{g.L * g.D, g.N, g.S()}, cell{g.L * g.D, g.N, g.H};
  AssignNamed(attrs, in, 2, state, "state",
              g.P > 0 ? "(num_layers * directions, batch, projection_size)"
                      : "(num_layers * directions, batch, state_size)");
  size_t next = 3;
  if (p.mode == kLstm)
    AssignNamed(attrs, in, next++, cell, "state_cell",
                "(num_layers * directions, batch, state_size)");
  if (p.use_sequence_length)
    AssignNamed(attrs, in, next, Shape{g.N}, "sequence_length", "(batch,)");
  AssignShape(attrs, out, 0, Shape{g.T, g.N, g.DS()}, "output");
  AssignShape(attrs, out, 1, state, "output");
  if (p.mode == kLstm) AssignShape(attrs, out, 2, cell, "output");
  AssignShape(attrs, out, out->size() - 1, Shape{g.ReserveSize()}, "output");
  return AllKnown(*in) && AllKnown(*out);
}

bool RnnType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const RNNParam& p = RnnParams(attrs);
  // Every array but sequence_length shares data's dtype; the lengths may be
  // of any numeric type (MXNet's scripts pass float32 or int32).
  const size_t shared = in->size() - (p.use_sequence_length ? 1 : 0);
  std::vector<DType> same(in->begin(), in->begin() + static_cast<std::ptrdiff_t>(shared));
  const bool ok = SameTypeAll(attrs, &same, out);
  CheckFloatTypes(attrs, same, *out);
  std::copy(same.begin(), same.end(), in->begin());
  if (p.use_sequence_length && in->back() == DType::kUnknown) in->back() = same[0];
  return ok && in->back() != DType::kUnknown;
}

std::vector<NodeEntry> RnnGrad(const NodePtr& n, const std::vector<NodeEntry>& ograds) {
  const RNNParam& p = RnnParams(n->attrs);
  std::vector<NodeEntry> inputs(ograds.begin(), ograds.begin() + RnnNumOutputGrads(p));
  const size_t n_in = n->inputs.size() - (p.use_sequence_length ? 1 : 0);
  for (size_t i = 0; i < n->inputs.size(); ++i) inputs.push_back(n->inputs[i]);
  inputs.push_back(NodeEntry{n, RnnNumOutputs(n->attrs) - 1, 0});
  std::vector<NodeEntry> r = MakeGradNode("_backward_RNN", n, std::move(inputs));
  if (n_in < n->inputs.size())  // the lengths get no gradient
    r.push_back(
        MakeNode("zeros_like", n->attrs.name + "_sequence_length_zerograd", {n->inputs.back()}));
  return r;
}

// _backward_RNN: the output gradients, the forward's inputs and its reserve
// in; the gradients of data, parameters, state[, state_cell] out, shaped as
// those inputs.
uint32_t RnnBackwardNumInputs(const NodeAttrs& attrs) {
  return RnnNumOutputGrads(RnnParams(attrs)) + RnnNumInputs(attrs) + 1;
}
uint32_t RnnBackwardNumOutputs(const NodeAttrs& attrs) {
  return RnnHasCell(attrs) ? 4 : 3;
}

bool RnnBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const size_t first = RnnNumOutputGrads(RnnParams(attrs));
  for (size_t i = 0; i < out->size(); ++i) AssignShape(attrs, out, i, (*in)[first + i], "output");
  return AllKnown(*out);
}

bool RnnBackwardType(const NodeAttrs&, std::vector<DType>* in, std::vector<DType>* out) {
  for (size_t i = 0; i < out->size(); ++i)
    if ((*out)[i] == DType::kUnknown) (*out)[i] = (*in)[0];
  return (*in)[0] != DType::kUnknown;
}

}  // namespace

TS_REGISTER_OP(RNN)
    .describe(R"(A recurrent layer over a whole sequence, as MXNet's fused RNN operator
(and cuDNN's): mode rnn_relu, rnn_tanh, lstm or gru, num_layers layers of
state_size units, optionally bidirectional, with dropout p between layers in
training. Layout TNC: data (sequence, batch, features), state and
state_cell (num_layers * directions, batch, state_size); the output is
(sequence, batch, directions * state_size), and with state_outputs the final
states follow.

The cells: LSTM i, f, o = sigmoid, g = tanh (gates in the order i f g o),
c' = f c + i g, h' = o tanh(c'); GRU r, z = sigmoid (order r z n),
n = tanh(W_n x + b_in + r (U_n h + b_hn)), h' = (1 - z) n + z h; RNN
h' = act(W x + b_i + U h + b_h).

`parameters` is one vector: every layer's and direction's W_i2h
(gates * state_size, input) and W_h2h (gates * state_size, state_size),
then their biases b_i2h and b_h2h, in MXNet's order, so MXNet-trained weights
load unchanged. An LSTM with projection_size P adds W_h2r (P, state_size)
after each W_h2h: r = W_h2r h recurs (W_h2h is then (4 * state_size, P)) and
is the output, so state, hy and the output are P wide; the cell is not. With use_sequence_length a last input gives each row's length;
steps past it output zeros and keep the state, and the reverse direction
starts at the row's last step.)")
    .set_num_inputs(RnnNumInputs)
    .set_num_outputs(RnnNumOutputs)
    .set_attr_parser(ParamParser<RNNParam>)
    .add_argument("data", "NDArray", "Input sequence, (sequence, batch, features).")
    .add_argument("parameters", "NDArray", "All weights and biases, packed as described.")
    .add_argument("state", "NDArray", "Initial hidden state, (layers * directions, batch, H).")
    .add_argument("state_cell", "NDArray", "LSTM only: initial cell state, shaped as state.")
    .add_argument("sequence_length", "NDArray",
                  "With use_sequence_length: each row's length, (batch,).")
    .add_arguments(RNNParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", RnnInputNames)
    .set_attr<FListOutputNames>("FListOutputNames", RnnOutputNames)
    .set_attr<FNumVisibleOutputs>("FNumVisibleOutputs",
                                  [](const NodeAttrs& attrs) {
                                    const RNNParam& p = RnnParams(attrs);
                                    return RnnNumOutputGrads(p);
                                  })
    .set_attr<FInferShape>("FInferShape", RnnShape)
    .set_attr<FInferType>("FInferType", RnnType)
    .set_attr<FResourceRequest>("FResourceRequest",
                                [](const NodeAttrs&) {
                                  return std::vector<ResourceRequest>{ResourceRequest::kRandom,
                                                                      ResourceRequest::kTempSpace};
                                })
    .set_attr<FCompute>(kFComputeCPU, RnnForwardCpu)
    .set_attr<FGradient>("FGradient", RnnGrad);

TS_REGISTER_OP(_backward_RNN)
    .describe(
        "Gradient of RNN. Inputs: the output gradients (out, and hy, cy with state_outputs), "
        "the forward's inputs and its reserve; outputs: the gradients of data, parameters, "
        "state and (LSTM) state_cell.")
    .set_num_inputs(RnnBackwardNumInputs)
    .set_num_outputs(RnnBackwardNumOutputs)
    .set_attr_parser(ParamParser<RNNParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", RnnBackwardShape)
    .set_attr<FInferType>("FInferType", RnnBackwardType)
    .set_attr<FResourceRequest>("FResourceRequest",
                                [](const NodeAttrs&) {
                                  return std::vector<ResourceRequest>{ResourceRequest::kTempSpace};
                                })
    .set_attr<FCompute>(kFComputeCPU, RnnBackwardCpu);

}  // namespace tessera::op
