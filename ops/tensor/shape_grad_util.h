// Small helpers for the gradient rules of the shape and indexing ops.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/op/node.h"

namespace tessera::op {

// A backward node of `n`: op `op_name` on `inputs` with exactly `dict` as
// parameters (unlike MakeGradNode, the forward parameters are not merged in,
// for backward ops whose parameters differ). Returns every output.
inline std::vector<NodeEntry> MakeBackwardNode(std::string_view op_name, const NodePtr& n,
                                               std::vector<NodeEntry> inputs, ParamDict dict = {},
                                               const std::string& suffix = "_backward") {
  NodeEntry e = MakeNode(op_name, n->attrs.name + suffix, std::move(inputs), std::move(dict));
  e.node->control_deps.push_back(n);
  std::vector<NodeEntry> out;
  for (uint32_t i = 0; i < e.node->num_outputs(); ++i) out.push_back({e.node, i, 0});
  return out;
}

// A zero gradient for input `i` of `n` (indices, conditions, shape donors).
inline NodeEntry ZeroGradOf(const NodePtr& n, size_t i) {
  return MakeNode("zeros_like", n->attrs.name + "_in" + std::to_string(i) + "_zerograd",
                  {n->inputs[i]});
}

// "arg0", "arg1", ... for ops with a variable number of inputs.
inline std::vector<std::string> NumberedNames(const char* prefix, size_t n) {
  std::vector<std::string> names;
  for (size_t i = 0; i < n; ++i) names.push_back(prefix + std::to_string(i));
  return names;
}

inline std::vector<std::pair<int, int>> InplaceFirst(const NodeAttrs&) {
  return {{0, 0}};
}

}  // namespace tessera::op
