// Graph nodes, as much as gradient rules need: an FGradient builds the
// backward of one node out of new nodes. engine/graph builds symbols and
// passes on the same types.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/op/op.h"

namespace tessera::op {

struct Node;
using NodePtr = std::shared_ptr<Node>;

// Output `index` of `node`. `version` counts writes to a variable node
// (MXNet's mutation tracking); 0 otherwise.
struct NodeEntry {
  NodePtr node;
  uint32_t index = 0;
  uint32_t version = 0;
};

struct Node {
  NodeAttrs attrs;  // attrs.op == nullptr: a variable
  std::vector<NodeEntry> inputs;
  std::vector<NodePtr> control_deps;  // a backward node points at its forward node
  // What a pass or autograd keeps on the node (autograd: the recorded
  // values and the gradient buffer).
  std::shared_ptr<void> info;

  Node() = default;
  Node(const Node&) = default;
  Node& operator=(const Node&) = default;
  // Frees the chain of nodes only this one keeps alive without recursing
  // once per node, so a graph a million nodes deep (an unrolled loop, a long
  // recorded autograd tape) is freed on any thread's stack.
  ~Node();

  const Op* op() const { return attrs.op; }
  bool is_variable() const { return attrs.op == nullptr; }
  uint32_t num_outputs() const { return is_variable() ? 1 : attrs.op->NumOutputs(attrs); }
  uint32_t num_inputs() const { return is_variable() ? 0 : attrs.op->NumInputs(attrs); }

  static NodePtr Create() { return std::make_shared<Node>(); }
  static NodePtr Variable(std::string name);
};

// A graph a control-flow node runs (NodeAttrs::subgraphs): its outputs; its
// inputs are its variables in DFSVisit order (graph::Symbol::ListInputs), which
// the node's parameters map to the node's own inputs.
struct Subgraph {
  std::vector<NodeEntry> outputs;
};

// A node applying `op_name` to `inputs` with parameters `dict` (parsed here,
// so a bad parameter fails when the graph is built). Returns output 0.
NodeEntry MakeNode(std::string_view op_name, std::string node_name, std::vector<NodeEntry> inputs,
                   ParamDict dict = {});

// The backward node of `n`: op `op_name` on `inputs`, with n's parameters,
// depending on n; returns one entry per output of the backward op.
std::vector<NodeEntry> MakeGradNode(std::string_view op_name, const NodePtr& n,
                                    std::vector<NodeEntry> inputs, ParamDict dict = {});

// Zero gradients for every input of `n` (ops whose inputs get no gradient).
std::vector<NodeEntry> MakeZeroGradNodes(const NodePtr& n);

// The FGradient rules of elementwise ops: the backward op takes the output
// gradients followed by the forward inputs (UseIn), the forward outputs
// (UseOut), both (UseInOut), or nothing more (UseNone).
struct ElemwiseGradUseIn {
  const char* op_name;
  std::vector<NodeEntry> operator()(const NodePtr& n, const std::vector<NodeEntry>& ograds) const;
};
struct ElemwiseGradUseOut {
  const char* op_name;
  std::vector<NodeEntry> operator()(const NodePtr& n, const std::vector<NodeEntry>& ograds) const;
};
struct ElemwiseGradUseInOut {
  const char* op_name;
  std::vector<NodeEntry> operator()(const NodePtr& n, const std::vector<NodeEntry>& ograds) const;
};
struct ElemwiseGradUseNone {
  const char* op_name;
  std::vector<NodeEntry> operator()(const NodePtr& n, const std::vector<NodeEntry>& ograds) const;
};

}  // namespace tessera::op
