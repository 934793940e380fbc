// _rnn_param_concat: the Gluon RNN layers' packing of their weights and
// biases into the fused RNN op's one parameter vector, as MXNet's. Every
// input is flattened and the results are joined (dim must be 0), and shape
// inference runs backwards too: with the output's size known (the RNN op
// infers it from the data), the inputs with a single unknown dimension (the
// first layer's i2h weights before the input size is known) get it.
#include <vector>

#include "ops/nn/nn_common.h"
#include "ops/nn/rnn_param_concat-inl.h"
#include "ops/tensor/concat_op-inl.h"

namespace tessera::op {
namespace {

// With the output's size known, inputs with one unknown dimension each get
// it, taken to be the same for all of them (the input size, shared by the
// first layer's i2h weights of both directions).
bool FillUnknownPieces(const NodeAttrs& attrs, std::vector<Shape>* in, int64_t known,
                       const Shape& o) {
  int64_t per_unit = 0;  // elements the unknown inputs add per unit of the missing size
  for (const Shape& s : *in) {
    if (s.known()) continue;
    int64_t rest = 1, missing = 0;
    for (int d = 0; d < s.ndim(); ++d) {
      if (s[d] == 0)
        ++missing;
      else
        rest *= s[d];
    }
    if (s.ndim() == 0 || missing != 1) return false;
    per_unit += rest;
  }
  const int64_t left = o.Size() - known;
  TS_CHECK(per_unit > 0 && left > 0 && left % per_unit == 0)
      << OpLabel(attrs) << ": the inputs of unknown shape cannot hold the " << left
      << " elements that the output " << o << " leaves for them";
  for (Shape& s : *in)
    if (!s.known())
      for (int d = 0; d < s.ndim(); ++d)
        if (s[d] == 0) s[d] = left / per_unit;
  return true;
}

bool ParamConcatShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = ParamsOf<ConcatParam>(attrs);
  TS_CHECK(p.dim == 0) << OpLabel(attrs) << ": dim must be 0 (the inputs are flattened), got "
                       << p.dim;
  TS_CHECK(static_cast<int>(in->size()) == p.num_args)
      << OpLabel(attrs) << ": num_args = " << p.num_args << " but " << in->size() << " inputs";
  int64_t known = 0;
  bool all_known = true;
  for (const Shape& s : *in) {
    if (s.known())
      known += s.Size();
    else
      all_known = false;
  }
  if (!all_known) {
    if (!(*out)[0].known() || !FillUnknownPieces(attrs, in, known, (*out)[0])) return false;
    known = 0;
    for (const Shape& s : *in) known += s.Size();
  }
  AssignShape(attrs, out, 0, Shape{known}, "output");
  return true;
}

// Inputs: ograd, then the forward's inputs (for their shapes).
bool ParamConcatBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in,
                              std::vector<Shape>* out) {
  for (size_t i = 0; i < out->size(); ++i) AssignShape(attrs, out, i, (*in)[i + 1], "output");
  return AllKnown(*out);
}

}  // namespace

TS_REGISTER_OP(_rnn_param_concat)
    .describe(R"(Flattens its inputs and joins them (dim must be 0): how the Gluon RNN
layers pack their weights and biases into the RNN op's parameter vector, as
MXNet's. Shape inference also runs backwards: from the output's size it
fills the unknown dimension of the inputs that have one (taken to be the
same size for all of them: the layer's input size).)")
    .set_num_inputs([](const NodeAttrs& attrs) {
      return static_cast<uint32_t>(ParamsOf<ConcatParam>(attrs).num_args);
    })
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<ConcatParam>)
    .set_key_var_num_args("num_args")
    .add_argument("data", "NDArray[]", "The arrays to flatten and join.")
    .add_arguments(ConcatParam::Fields())
    .set_attr<FInferShape>("FInferShape", ParamConcatShape)
    .set_attr<FInferType>("FInferType", SameTypeAll)
    .set_attr<FCompute>(kFComputeCPU, ParamConcatForward<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& ograds) {
      std::vector<NodeEntry> in{ograds[0]};
      in.insert(in.end(), n->inputs.begin(), n->inputs.end());
      return MakeGradNode("_backward_rnn_param_concat", n, std::move(in));
    });

TS_REGISTER_OP(_backward_rnn_param_concat)
    .describe(
        "Gradient of _rnn_param_concat: the output gradient cut into the inputs' pieces. "
        "Inputs: ograd and the forward's inputs (for their shapes).")
    .set_num_inputs([](const NodeAttrs& attrs) {
      return static_cast<uint32_t>(ParamsOf<ConcatParam>(attrs).num_args) + 1;
    })
    .set_num_outputs([](const NodeAttrs& attrs) {
      return static_cast<uint32_t>(ParamsOf<ConcatParam>(attrs).num_args);
    })
    .set_attr_parser(ParamParser<ConcatParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", ParamConcatBackwardShape)
    .set_attr<FInferType>("FInferType",
                          [](const NodeAttrs&, std::vector<DType>* in, std::vector<DType>* out) {
                            for (DType& t : *out)
                              if (t == DType::kUnknown) t = (*in)[0];
                            return (*in)[0] != DType::kUnknown;
                          })
    .set_attr<FCompute>(kFComputeCPU, ParamConcatBackward<cpu>);

}  // namespace tessera::op
