// The signature every fused optimizer update registers (optimizer_op.cc,
// sgd_multi_op.cc, ftml_op.cc): its parameters, its array inputs in order,
// the ones among them it updates in place, and its one output, the new
// weight.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/op.h"

namespace tessera::op {

// One array input of an update: its name and its text in the op's docs.
struct UpdateInput {
  const char* name;
  const char* doc;
};

// The new weight (output 0) may take the weight's memory (input 0), so that
// `out=weight` makes the whole update in place.
inline std::vector<std::pair<int, int>> InplaceWeight(const NodeAttrs&) {
  return {{0, 0}};
}

// Declares Param (fields and parser), the inputs and the one output of an
// update. Each input is documented and named in FListInputNames from the
// same entry, so the docs and a graph's input names cannot disagree;
// `states` are the inputs the update writes in place (FMutateInputs, left
// unset when there are none).
template <typename Param>
Op& UpdateSignature(Op& op, std::initializer_list<UpdateInput> inputs,
                    std::vector<uint32_t> states = {}) {
  std::vector<std::string> names;
  for (const UpdateInput& in : inputs) {
    op.add_argument(in.name, "NDArray", in.doc);
    names.emplace_back(in.name);
  }
  op.set_num_inputs(uint32_t(inputs.size())).set_num_outputs(1);
  op.set_attr<FListInputNames>("FListInputNames", FixedInputNames(std::move(names)));
  op.set_attr_parser(ParamParser<Param>);
  op.add_arguments(Param::Fields());
  if (!states.empty())
    op.set_attr<FMutateInputs>("FMutateInputs",
                               [states = std::move(states)](const NodeAttrs&) { return states; });
  return op;
}

}  // namespace tessera::op

// TS_REGISTER_UPDATE(name, Param, {{"weight", "Weight"}, ...}, {2, ...})
//     .describe(...) .set_attr<...>(...);  at namespace scope, as
// TS_REGISTER_OP, with the signature of UpdateSignature.
#define TS_REGISTER_UPDATE(name, Param, ...)                                         \
  [[maybe_unused]] static ::tessera::op::Op& TS_OP_CONCAT(ts_op_reg_, __COUNTER__) = \
      ::tessera::op::UpdateSignature<Param>(::tessera::op::Op::Register(#name), __VA_ARGS__)
