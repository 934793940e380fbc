#include "engine/graph/symbol.h"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "engine/graph/input_names.h"
#include "engine/op/op_attr_types.h"

namespace tessera::graph {

namespace {

std::mutex& NameMutex() {
  static std::mutex m;
  return m;
}
std::unordered_map<std::string, int>& NameCounters() {
  static std::unordered_map<std::string, int> counters;
  return counters;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string NewName(std::string_view hint) {
  std::lock_guard<std::mutex> lock(NameMutex());
  int& n = NameCounters()[std::string(hint)];
  return std::string(hint) + std::to_string(n++);
}

void ResetNames() {
  std::lock_guard<std::mutex> lock(NameMutex());
  NameCounters().clear();
}

void DFSVisit(const std::vector<NodeEntry>& heads, const std::function<void(const NodePtr&)>& fn) {
  // Iterative post-order, so deep graphs (long unrolled chains) do not
  // overflow the stack.
  std::unordered_set<const Node*> visited;
  std::vector<std::pair<NodePtr, size_t>> stack;  // node, next child to visit
  auto child = [](const Node& n, size_t i) -> const NodePtr& {
    return i < n.inputs.size() ? n.inputs[i].node : n.control_deps[i - n.inputs.size()];
  };
  for (const NodeEntry& head : heads) {
    if (!head.node || !visited.insert(head.node.get()).second) continue;
    stack.emplace_back(head.node, 0);
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      const size_t n_children = node->inputs.size() + node->control_deps.size();
      if (next < n_children) {
        const NodePtr& c = child(*node, next++);
        if (c && visited.insert(c.get()).second) stack.emplace_back(c, 0);
        continue;
      }
      NodePtr done = node;
      stack.pop_back();
      fn(done);
    }
  }
}

// The outputs a symbol shows for an op node: FNumVisibleOutputs (Dropout's
// mask and topk's hidden indices stay internal, as in NNVM), else all.
static uint32_t NumVisibleOutputs(const Node& node) {
  static const auto& fvisible = op::Op::GetAttr<op::FNumVisibleOutputs>("FNumVisibleOutputs");
  if (node.is_variable()) return 1;
  const op::FNumVisibleOutputs* f = fvisible.find(node.op());
  return f ? std::min((*f)(node.attrs), node.num_outputs()) : node.num_outputs();
}

std::vector<uint32_t> MutableInputs(const Node& node) {
  static const auto& fmutate = op::Op::GetAttr<op::FMutateInputs>("FMutateInputs");
  if (node.is_variable()) return {};
  const op::FMutateInputs* f = fmutate.find(node.op());
  return f ? (*f)(node.attrs) : std::vector<uint32_t>{};
}

Symbol Symbol::Variable(std::string name, ParamDict attrs) {
  TS_CHECK(!name.empty()) << "Variable: the name must not be empty";
  NodePtr n = Node::Variable(std::move(name));
  n->attrs.dict = std::move(attrs);
  return Symbol{{{n, 0, 0}}};
}

Symbol Symbol::Create(const op::Op* op, ParamDict params, const std::vector<Symbol>& args,
                      const std::map<std::string, Symbol>& kwargs, std::string name) {
  TS_CHECK(op) << "symbol: no operator given";
  NodePtr n = Node::Create();
  n->attrs.op = op;
  n->attrs.name = name.empty() ? NewName(Lower(op->name())) : std::move(name);
  const std::string& num_key = op->key_var_num_args();
  if (!num_key.empty() && !params.contains(num_key))
    params[num_key] = std::to_string(args.size() + kwargs.size());
  n->attrs.dict = std::move(params);
  op->ParseAttrs(&n->attrs);

  const std::vector<std::string> names = InputNames(n->attrs);
  const size_t n_in = names.size();
  TS_CHECK(args.size() <= n_in) << op->name() << " (node " << n->attrs.name << "): takes " << n_in
                                << " input" << (n_in == 1 ? "" : "s") << ", got " << args.size();
  std::vector<std::optional<NodeEntry>> slots(n_in);
  auto one_output = [&](const Symbol& s, const std::string& what) {
    TS_CHECK(s.outputs.size() == 1)
        << op->name() << " (node " << n->attrs.name << "): input '" << what << "' has "
        << s.outputs.size() << " outputs; pick one with sym[i]";
    return s.outputs[0];
  };
  for (size_t i = 0; i < args.size(); ++i) slots[i] = one_output(args[i], names[i]);
  for (const auto& [key, sym] : kwargs) {
    auto it = std::find(names.begin(), names.end(), key);
    if (it == names.end()) {
      std::string list;
      for (const std::string& s : names) list += (list.empty() ? "" : ", ") + s;
      TS_THROW << op->name() << " (node " << n->attrs.name << "): unknown input '" << key
               << "' (inputs: " << list << ")";
    }
    const size_t i = static_cast<size_t>(it - names.begin());
    TS_CHECK(!slots[i]) << op->name() << " (node " << n->attrs.name << "): input '" << key
                        << "' given twice";
    slots[i] = one_output(sym, key);
  }
  n->inputs.reserve(n_in);
  for (size_t i = 0; i < n_in; ++i)
    n->inputs.push_back(slots[i] ? *slots[i]
                                 : NodeEntry{Node::Variable(n->attrs.name + "_" + names[i]), 0, 0});
  Symbol s;
  for (uint32_t i = 0; i < NumVisibleOutputs(*n); ++i) s.outputs.push_back({n, i, 0});
  return s;
}

Symbol Symbol::Compose(const std::map<std::string, Symbol>& kwargs) const {
  std::unordered_map<const Node*, NodeEntry> replace;
  std::unordered_set<std::string> used;
  DFSVisit(outputs, [&](const NodePtr& n) {
    if (!n->is_variable()) return;
    auto it = kwargs.find(n->attrs.name);
    if (it == kwargs.end()) return;
    TS_CHECK(it->second.outputs.size() == 1)
        << "compose: the symbol given for '" << it->first << "' has " << it->second.outputs.size()
        << " outputs; pick one with sym[i]";
    replace[n.get()] = it->second.outputs[0];
    used.insert(it->first);
  });
  for (const auto& [key, sym] : kwargs) {
    if (used.count(key)) continue;
    std::string list;
    for (const std::string& a : ListArguments()) list += (list.empty() ? "" : ", ") + a;
    TS_THROW << "compose: '" << key << "' is not an argument of this symbol (arguments: " << list
             << ")";
  }
  // Copy the op nodes so the original symbol keeps its inputs.
  std::unordered_map<const Node*, NodePtr> copies;
  DFSVisit(outputs, [&](const NodePtr& n) {
    if (n->is_variable()) return;
    NodePtr c = std::make_shared<Node>(*n);
    for (NodeEntry& e : c->inputs) {
      if (auto r = replace.find(e.node.get()); r != replace.end()) {
        e = r->second;
      } else if (auto k = copies.find(e.node.get()); k != copies.end()) {
        e.node = k->second;
      }
    }
    for (NodePtr& d : c->control_deps)
      if (auto k = copies.find(d.get()); k != copies.end()) d = k->second;
    copies[n.get()] = c;
  });
  Symbol s;
  for (const NodeEntry& e : outputs) {
    if (auto r = replace.find(e.node.get()); r != replace.end()) {
      s.outputs.push_back(r->second);
    } else if (auto k = copies.find(e.node.get()); k != copies.end()) {
      s.outputs.push_back({k->second, e.index, e.version});
    } else {
      s.outputs.push_back(e);
    }
  }
  return s;
}

Symbol Symbol::operator[](size_t index) const {
  TS_CHECK(index < outputs.size())
      << "symbol: output " << index << " out of range (it has " << outputs.size() << " outputs)";
  return Symbol{{outputs[index]}};
}

Symbol Symbol::Output(std::string_view name) const {
  const std::vector<std::string> names = ListOutputs();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return (*this)[i];
  std::string list;
  for (const std::string& s : names) list += (list.empty() ? "" : ", ") + s;
  TS_THROW << "symbol: no output named '" << name << "' (outputs: " << list << ")";
}

Symbol Symbol::GetInternals() const {
  Symbol s;
  DFSVisit(outputs, [&](const NodePtr& n) {
    for (uint32_t i = 0; i < NumVisibleOutputs(*n); ++i) s.outputs.push_back({n, i, 0});
  });
  return s;
}

Symbol Symbol::GetChildren() const {
  Symbol s;
  std::unordered_set<const Node*> seen;
  for (const NodeEntry& e : outputs) {
    if (!seen.insert(e.node.get()).second) continue;
    for (const NodeEntry& in : e.node->inputs) s.outputs.push_back(in);
  }
  return s;
}

std::vector<NodePtr> Symbol::ListInputs(InputKind kind) const {
  std::unordered_set<const Node*> mutated;
  std::vector<NodePtr> vars;
  DFSVisit(outputs, [&](const NodePtr& n) {
    if (n->is_variable()) {
      vars.push_back(n);
      return;
    }
    for (uint32_t i : MutableInputs(*n))
      if (i < n->inputs.size()) mutated.insert(n->inputs[i].node.get());
  });
  if (kind == InputKind::kAll) return vars;
  std::vector<NodePtr> out;
  for (const NodePtr& v : vars)
    if (mutated.count(v.get()) == (kind == InputKind::kAuxStates ? 1u : 0u)) out.push_back(v);
  return out;
}

namespace {
std::vector<std::string> Names(const std::vector<NodePtr>& nodes) {
  std::vector<std::string> out;
  out.reserve(nodes.size());
  for (const NodePtr& n : nodes) out.push_back(n->attrs.name);
  return out;
}
}  // namespace

std::vector<std::string> Symbol::ListArguments() const {
  return Names(ListInputs(InputKind::kArguments));
}
std::vector<std::string> Symbol::ListAuxiliaryStates() const {
  return Names(ListInputs(InputKind::kAuxStates));
}

std::vector<std::string> Symbol::ListOutputs() const {
  std::vector<std::string> out;
  for (const NodeEntry& e : outputs) {
    if (e.node->is_variable()) {
      out.push_back(e.node->attrs.name);
    } else {
      out.push_back(e.node->attrs.name + "_" + OutputNames(e.node->attrs).at(e.index));
    }
  }
  return out;
}

const NodePtr& Symbol::HeadNode(std::string_view what) const {
  TS_CHECK(!outputs.empty()) << what << ": the symbol is empty";
  for (const NodeEntry& e : outputs)
    TS_CHECK(e.node == outputs[0].node)
        << what << ": the symbol groups outputs of several nodes; pick one with sym[i]";
  return outputs[0].node;
}

std::optional<std::string> Symbol::GetAttr(std::string_view key) const {
  const ParamDict& dict = HeadNode("attr")->attrs.dict;
  auto it = dict.find(key);
  if (it == dict.end()) return std::nullopt;
  return it->second;
}

void Symbol::SetAttrs(const ParamDict& attrs) {
  Node& n = *HeadNode("set attributes");
  const NodeAttrs before = n.attrs;
  for (const auto& [k, v] : attrs) n.attrs.dict[k] = v;
  if (n.is_variable()) return;
  try {
    n.op()->ParseAttrs(&n.attrs);  // a parameter changed must still parse
  } catch (...) {
    n.attrs = before;
    throw;
  }
}

ParamDict Symbol::ListAttr() const {
  return HeadNode("list_attr")->attrs.dict;
}

std::map<std::string, ParamDict> Symbol::AttrDict() const {
  std::map<std::string, ParamDict> out;
  DFSVisit(outputs, [&](const NodePtr& n) {
    if (!n->attrs.dict.empty()) out[n->attrs.name] = n->attrs.dict;
  });
  return out;
}

Symbol Symbol::Copy() const {
  std::unordered_map<const Node*, NodePtr> copies;
  DFSVisit(outputs, [&](const NodePtr& n) {
    NodePtr c = std::make_shared<Node>(*n);
    for (NodeEntry& e : c->inputs) e.node = copies.at(e.node.get());
    for (NodePtr& d : c->control_deps) d = copies.at(d.get());
    copies[n.get()] = c;
  });
  Symbol s;
  for (const NodeEntry& e : outputs)
    s.outputs.push_back({copies.at(e.node.get()), e.index, e.version});
  return s;
}

Symbol Group(const std::vector<Symbol>& symbols) {
  Symbol s;
  for (const Symbol& x : symbols)
    s.outputs.insert(s.outputs.end(), x.outputs.begin(), x.outputs.end());
  return s;
}

}  // namespace tessera::graph
