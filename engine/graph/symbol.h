// Symbol: a list of outputs of a graph of Nodes (MXNet's symbolic API).
//
// A symbol is a value: copying it shares the nodes, so composing a network
// is building a DAG bottom-up. Variables are nodes without an op; every other
// node applies a registered op to the outputs of other nodes. Names are
// given or made ("fullyconnected0"); inputs left out at construction become
// variables named "<node>_<input>" ("fc1_weight").
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/op/node.h"

namespace tessera::graph {

using op::Node;
using op::NodeAttrs;
using op::NodeEntry;
using op::NodePtr;
using op::ParamDict;

// "<hint><n>", with one counter per hint: fullyconnected0, fullyconnected1.
std::string NewName(std::string_view hint);
// Restarts every counter (tests, and a fresh REPL state).
void ResetNames();

// Visits every node reachable from `heads` once, inputs (then control
// dependencies) before the node: a topological order.
void DFSVisit(const std::vector<NodeEntry>& heads, const std::function<void(const NodePtr&)>& fn);

// The inputs of `node` the op writes (auxiliary states, FMutateInputs).
std::vector<uint32_t> MutableInputs(const Node& node);

class Symbol {
 public:
  enum class InputKind { kAll, kArguments, kAuxStates };

  std::vector<NodeEntry> outputs;

  // A free variable. `attrs` are stored on the node ("__shape__", "__dtype__",
  // "__init__", "lr_mult", any user key).
  static Symbol Variable(std::string name, ParamDict attrs = {});

  // `op` applied to `args` (in input order) followed by `kwargs` (by input
  // name, FListInputNames). `params` holds the op's parameters as MXNet
  // strings plus hidden "__key__" attributes; they are parsed here, so a bad
  // parameter fails now, naming the op. Each argument must have exactly one
  // output. Inputs not given become variables "<name>_<input name>".
  // Ops with a variable input count (key_var_num_args) take the count from
  // the arguments when the parameter is absent. `name` empty: NewName of
  // the lower-cased op name.
  static Symbol Create(const op::Op* op, ParamDict params, const std::vector<Symbol>& args,
                       const std::map<std::string, Symbol>& kwargs, std::string name = "");

  // A copy whose free variables named in `kwargs` are replaced by those
  // symbols (each with one output); op nodes are copied, the rest shared.
  // An unknown name is an error listing the arguments.
  Symbol Compose(const std::map<std::string, Symbol>& kwargs) const;

  size_t NumOutputs() const { return outputs.size(); }
  Symbol operator[](size_t index) const;  // 0-based; error when out of range
  // The output named `name` (as ListOutputs says it); error when unknown.
  Symbol Output(std::string_view name) const;
  // Every output of every node, in topological order ("fc1_output", "fc1_weight", ...).
  Symbol GetInternals() const;
  // The inputs of the head node; empty symbol for a variable.
  Symbol GetChildren() const;

  // Names of the free variables, topological order, each once.
  std::vector<std::string> ListArguments() const;
  // "<node>_<output name>" ("fc1_output", "softmax_output", "split0_output1"); variables by name.
  std::vector<std::string> ListOutputs() const;
  std::vector<std::string> ListAuxiliaryStates() const;
  std::vector<NodePtr> ListInputs(InputKind kind) const;

  // Attribute `key` of the head node (a symbol with one output node).
  std::optional<std::string> GetAttr(std::string_view key) const;
  // Sets attributes of the head node; op parameters may not be changed here.
  void SetAttrs(const ParamDict& attrs);
  // The head node's attributes (parameters and hidden keys).
  ParamDict ListAttr() const;
  // node name -> its attributes, for every node that has any.
  std::map<std::string, ParamDict> AttrDict() const;

  // A deep copy: new nodes, same structure.
  Symbol Copy() const;

  // The head node, checked: errors when the symbol has several output nodes.
  const NodePtr& HeadNode(std::string_view what) const;
};

// One symbol whose outputs are the outputs of all of `symbols`.
Symbol Group(const std::vector<Symbol>& symbols);

}  // namespace tessera::graph
