// argmax and argmin over one axis (or the flattened array).
#include "ops/tensor/reduce_op-inl.h"

namespace tessera::op {

namespace {

bool ArgReduceType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  CheckTypeSet(attrs, (*in)[0], TypeSet::kNumeric, "input 0");
  if ((*in)[0] == DType::kUnknown) return false;
  AssignType(attrs, out, 0, (*in)[0], "output");  // MXNet: indices in the input's dtype
  return true;
}

std::vector<NodeEntry> NoGradient(const NodePtr& n, const std::vector<NodeEntry>&) {
  return MakeZeroGradNodes(n);
}

const char* const kArgDoc = R"(

Indices are 0-based and returned as numbers of the input's dtype, as MXNet
does (int32 data gives int32 indices; float16 holds integers exactly only up
to 2048, int8 and uint8 only up to 127 and 255). Ties give the first
position; NaN counts as the extreme (the first NaN's index, as in NumPy). No
gradient (zeros).)";

// argmax and argmin differ only in their comparison and their doc.
template <typename Cmp>
Op& DefineArgReduce(Op& op, const char* extreme, const char* example) {
  return op
      .describe(std::string("Index of the ") + extreme +
                R"( along `axis`; with axis None, the flat index
into the whole array (shape (1,), or all ones with keepdims).

Example: )" + example +
                kArgDoc)
      .set_num_inputs(1)
      .set_num_outputs(1)
      .set_attr_parser(ParamParser<ReduceAxisParam>)
      .add_argument("data", "NDArray", "The input array.")
      .add_arguments(ReduceAxisParam::Fields())
      .set_attr<FInferShape>("FInferShape", ReduceShape<ReduceAxisParam>)
      .set_attr<FInferType>("FInferType", ArgReduceType)
      .set_attr<FGradient>("FGradient", NoGradient)
      .set_attr<FCompute>(kFComputeCPU, ArgReduceCompute<cpu, Cmp>);
}

[[maybe_unused]] const Op& kArgmax = DefineArgReduce<reduce::ArgMax>(
    Op::Register("argmax"), "maximum",
    "argmax([[1, 5, 3], [4, 2, 6]], axis=1) = [1, 2], argmax of the same = [5].");
[[maybe_unused]] const Op& kArgmin = DefineArgReduce<reduce::ArgMin>(
    Op::Register("argmin"), "minimum",
    "argmin([[1, 5, 3], [4, 2, 6]], axis=1) = [0, 1], argmin of the same = [0].");

// argmax_channel: argmax over the last axis, no parameters (MXNet's).
void ParseArgmaxChannel(NodeAttrs* attrs) {
  TS_CHECK(attrs->dict.empty()) << "argmax_channel: takes no parameters, got '"
                                << attrs->dict.begin()->first << "'";
  ReduceAxisParam p;
  p.axis = -1;
  attrs->parsed = p;
}

}  // namespace

TS_REGISTER_OP(argmax_channel)
    .describe(R"(Index of the maximum along the last axis: argmax(data, axis=-1).

Example: argmax_channel([[0, 1, 2], [3, 4, 5]]) = [2, 2].)" +
              std::string(kArgDoc))
    .set_num_inputs(1)
    .set_num_outputs(1)
    .set_attr_parser(ParseArgmaxChannel)
    .add_argument("data", "NDArray", "The input array.")
    .set_attr<FInferShape>("FInferShape", ReduceShape<ReduceAxisParam>)
    .set_attr<FInferType>("FInferType", ArgReduceType)
    .set_attr<FGradient>("FGradient", NoGradient)
    .set_attr<FCompute>(kFComputeCPU, ArgReduceCompute<cpu, reduce::ArgMax>);

}  // namespace tessera::op
