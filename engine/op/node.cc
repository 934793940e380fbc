#include "engine/op/node.h"

namespace tessera::op {

Node::~Node() {
  // The default destructor frees an input that only this node holds from
  // inside this one, and that input's input from inside that: one frame per
  // node of a chain, a stack overflow at a few hundred thousand. Instead the
  // inputs this node alone keeps alive move to a local list, and each gives
  // up its own sole-owned inputs to the list before it is freed, so every
  // node dies with nothing left to free below it. Shared inputs are only
  // released (their other owners keep them). A count that another thread
  // drops at the same moment at worst frees one node from inside this loop,
  // which is iterative again.
  std::vector<NodePtr> doomed;
  auto take = [&doomed](NodePtr& p) {
    if (p && p.use_count() == 1) doomed.push_back(std::move(p));
  };
  for (NodeEntry& e : inputs) take(e.node);
  for (NodePtr& d : control_deps) take(d);
  while (!doomed.empty()) {
    NodePtr n = std::move(doomed.back());
    doomed.pop_back();
    for (NodeEntry& e : n->inputs) take(e.node);
    for (NodePtr& d : n->control_deps) take(d);
  }
}

NodePtr Node::Variable(std::string name) {
  NodePtr n = Create();
  n->attrs.name = std::move(name);
  return n;
}

NodeEntry MakeNode(std::string_view op_name, std::string node_name, std::vector<NodeEntry> inputs,
                   ParamDict dict) {
  NodePtr n = Node::Create();
  n->attrs.name = std::move(node_name);
  n->attrs.dict = std::move(dict);
  Op::Get(op_name)->ParseAttrs(&n->attrs);
  n->inputs = std::move(inputs);
  return {n, 0, 0};
}

std::vector<NodeEntry> MakeGradNode(std::string_view op_name, const NodePtr& n,
                                    std::vector<NodeEntry> inputs, ParamDict dict) {
  ParamDict merged = n->attrs.dict;
  for (auto& [k, v] : dict) merged[k] = v;
  NodeEntry e =
      MakeNode(op_name, n->attrs.name + "_backward", std::move(inputs), std::move(merged));
  e.node->control_deps.push_back(n);
  std::vector<NodeEntry> out;
  for (uint32_t i = 0; i < e.node->num_outputs(); ++i) out.push_back({e.node, i, 0});
  return out;
}

std::vector<NodeEntry> MakeZeroGradNodes(const NodePtr& n) {
  std::vector<NodeEntry> out;
  for (size_t i = 0; i < n->inputs.size(); ++i)
    out.push_back(MakeNode("zeros_like", n->attrs.name + "_in" + std::to_string(i) + "_zerograd",
                           {n->inputs[i]}));
  return out;
}

namespace {
std::vector<NodeEntry> Outputs(const NodePtr& n) {
  std::vector<NodeEntry> out;
  for (uint32_t i = 0; i < n->num_outputs(); ++i) out.push_back({n, i, 0});
  return out;
}
}  // namespace

std::vector<NodeEntry> ElemwiseGradUseIn::operator()(const NodePtr& n,
                                                     const std::vector<NodeEntry>& ograds) const {
  std::vector<NodeEntry> in = ograds;
  in.insert(in.end(), n->inputs.begin(), n->inputs.end());
  return MakeGradNode(op_name, n, std::move(in));
}
std::vector<NodeEntry> ElemwiseGradUseOut::operator()(const NodePtr& n,
                                                      const std::vector<NodeEntry>& ograds) const {
  std::vector<NodeEntry> in = ograds;
  for (const NodeEntry& e : Outputs(n)) in.push_back(e);
  return MakeGradNode(op_name, n, std::move(in));
}
std::vector<NodeEntry> ElemwiseGradUseInOut::operator()(
    const NodePtr& n, const std::vector<NodeEntry>& ograds) const {
  std::vector<NodeEntry> in = ograds;
  in.insert(in.end(), n->inputs.begin(), n->inputs.end());
  for (const NodeEntry& e : Outputs(n)) in.push_back(e);
  return MakeGradNode(op_name, n, std::move(in));
}
std::vector<NodeEntry> ElemwiseGradUseNone::operator()(const NodePtr& n,
                                                       const std::vector<NodeEntry>& ograds) const {
  return MakeGradNode(op_name, n, ograds);
}

}  // namespace tessera::op
