// Reading symbol JSON (json.h): the current layout and the older ones, with
// the upgrades MXNet applies on load (src/nnvm/legacy_json_util.cc):
//  - hidden keys written plainly by old versions ("lr_mult", "ctx_group")
//    become "__lr_mult__"; "<input>_lr_mult" on an op moves to that input's
//    variable (UpgradeJSON_FixParsing);
//  - before 0.9, auxiliary states were not nodes: an op given fewer inputs
//    than it takes gets variables "<node>_<input name>" (000800_000900);
//  - before 0.9.5, argmax/argmin axis=-1 meant "no axis" (000904_000905).
// Everything read is checked before use, so a damaged file is an error that
// names the node, never a crash.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/base/error.h"
#include "engine/graph/control_flow_params.h"
#include "engine/graph/input_names.h"
#include "engine/graph/json.h"
#include "engine/op/op_attr_types.h"

namespace tessera::graph {

namespace {

using Json = nlohmann::json;

// Keys MXNet keeps as "__key__" (c_api_symbolic.cc, kHiddenKeys).
constexpr std::string_view kHiddenKeys[] = {"ctx_group",       "lr_mult",      "wd_mult",
                                            "force_mirroring", "mirror_stage", "profiler_scope"};

// Nesting beyond this is not a symbol file; refusing it early bounds the work
// (and the stack) spent on hostile input.
constexpr int kMaxDepth = 64;

void CheckDepth(std::string_view text, std::string_view source) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      TS_CHECK(++depth <= kMaxDepth)
          << source << ": not a symbol file: JSON nested deeper than " << kMaxDepth << " levels";
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

// A JSON value for a message, cut short: a damaged file can hold anything.
std::string Short(const nlohmann::json& v) {
  std::string s = v.dump();
  return s.size() <= 60 ? s : s.substr(0, 57) + "...";
}

// "node 3 'conv1' (Convolution)": how errors name a node.
std::string NodeLabel(size_t id, const std::string& name, std::string_view op) {
  std::string s = "node " + std::to_string(id) + " '" + name + "'";
  if (op != "null") s += " (" + std::string(op) + ")";
  return s;
}

class Loader {
 public:
  explicit Loader(std::string_view source) : source_(source) {}

  Symbol Load(std::string_view text, int* version_out) {
    CheckDepth(text, source_);
    Json doc;
    try {
      doc = Json::parse(text.begin(), text.end());
    } catch (const Json::exception& e) {
      // "[json.exception.parse_error.101] parse error at line 1, ..." -> from "parse error".
      std::string what = e.what();
      if (size_t p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
      TS_THROW << source_ << ": not valid JSON: " << what;
    }
    TS_CHECK(doc.is_object()) << source_ << ": not a symbol file: the top level is not an object";
    ReadVersion(doc);
    if (version_out) *version_out = version_;
    return LoadGraph(doc, "the file");
  }

 private:
  // A subgraph's loader: errors name the node that holds it.
  Loader(std::string source, int version) : source_(std::move(source)), version_(version) {}

  Symbol LoadGraph(const Json& doc, const std::string& what) {
    TS_CHECK(doc.is_object()) << source_ << ": " << what << " is not an object";
    const Json& nodes = Field(doc, "nodes", what);
    TS_CHECK(nodes.is_array()) << source_ << ": \"nodes\" is not an array";
    const Json& heads = Field(doc, "heads", what);
    TS_CHECK(heads.is_array()) << source_ << ": \"heads\" is not an array";
    num_nodes_ = nodes.size();

    // Names and ops first: every missing op is reported at once, before any
    // other complaint about a file this build cannot run anyway.
    std::vector<std::string> names, op_names;
    std::vector<std::pair<std::string, std::string>> missing;  // op, first node using it
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Json& jn = nodes[i];
      TS_CHECK(jn.is_object()) << source_ << ": node " << i << " is not an object";
      names.push_back(StringField(jn, "name", "node " + std::to_string(i)));
      op_names.push_back(StringField(jn, "op", NodeLabel(i, names.back(), "null")));
      const std::string& op = op_names.back();
      if (op == "null" || op::Op::Find(op)) continue;
      bool seen = false;
      for (const auto& m : missing) seen = seen || m.first == op;
      if (!seen) missing.emplace_back(op, names.back());
    }
    if (!missing.empty()) {
      std::string ops, users;
      for (const auto& [op, node] : missing) {
        ops += (ops.empty() ? "" : ", ") + op;
        users += (users.empty() ? "" : ", ") + node;
      }
      TS_THROW << source_ << ": this build has no operator(s) " << ops << " (used by nodes "
               << users << ")";
    }

    for (size_t i = 0; i < nodes.size(); ++i)
      built_.push_back(BuildNode(i, nodes[i], names[i], op_names[i]));

    Symbol symbol;
    TS_CHECK(!heads.empty()) << source_ << ": \"heads\" is empty: the symbol has no outputs";
    for (size_t k = 0; k < heads.size(); ++k)
      symbol.outputs.push_back(ReadEntry(heads[k], built_.size(), "head " + std::to_string(k)));
    return symbol;
  }

  const Json& Field(const Json& obj, const char* key, const std::string& where) const {
    auto it = obj.find(key);
    TS_CHECK(it != obj.end()) << source_ << ": " << where << " has no \"" << key << "\"";
    return *it;
  }
  std::string StringField(const Json& obj, const char* key, const std::string& where) const {
    const Json& v = Field(obj, key, where);
    TS_CHECK(v.is_string()) << source_ << ": " << where << ": \"" << key << "\" is not a string";
    return v.get<std::string>();
  }

  // A non-negative integer that fits in 32 bits.
  uint32_t Index(const Json& v, const std::string& where) const {
    TS_CHECK(v.is_number_integer())
        << source_ << ": " << where << ": " << Short(v) << " is not an integer";
    const bool ok = v.is_number_unsigned()
                        ? v.get<uint64_t>() <= UINT32_MAX
                        : v.get<int64_t>() >= 0 && v.get<int64_t>() <= UINT32_MAX;
    TS_CHECK(ok) << source_ << ": " << where << ": " << Short(v) << " is out of range";
    return static_cast<uint32_t>(v.get<uint64_t>());
  }

  void ReadVersion(const Json& doc) {
    auto attrs = doc.find("attrs");
    if (attrs == doc.end()) return;
    TS_CHECK(attrs->is_object()) << source_ << ": the graph's \"attrs\" is not an object";
    auto v = attrs->find("mxnet_version");
    if (v == attrs->end()) return;
    // dmlc writes a typed value as [type name, value]: ["int", 10401].
    TS_CHECK(v->is_array() && v->size() == 2 && (*v)[0] == "int")
        << source_ << ": \"mxnet_version\" is " << Short(*v) << ", not [\"int\", <version>]";
    const uint32_t version = Index((*v)[1], "\"mxnet_version\"");
    TS_CHECK(version <= INT32_MAX)
        << source_ << ": \"mxnet_version\" " << version << " is out of range";
    version_ = static_cast<int>(version);
  }

  // [node, index] or [node, index, version], naming a node before `limit`.
  NodeEntry ReadEntry(const Json& e, size_t limit, const std::string& where) const {
    TS_CHECK(e.is_array() && (e.size() == 2 || e.size() == 3))
        << source_ << ": " << where << ": " << Short(e)
        << " is not an entry [node, index] or [node, index, version]";
    const uint32_t nid = Index(e[0], where);
    TS_CHECK(nid < num_nodes_) << source_ << ": " << where << " refers to node " << nid
                               << ", but the file has " << num_nodes_ << " node(s)";
    TS_CHECK(nid < limit) << source_ << ": " << where << " refers to node " << nid
                          << ", which does not come before it (nodes must be in topological "
                             "order)";
    const NodePtr& node = built_[nid];
    const uint32_t index = Index(e[1], where);
    TS_CHECK(index < node->num_outputs())
        << source_ << ": " << where << " refers to output " << index << " of "
        << NodeLabel(nid, node->attrs.name, node->is_variable() ? "null" : node->op()->name())
        << ", which has " << node->num_outputs();
    return NodeEntry{node, index, e.size() == 3 ? Index(e[2], where) : 0};
  }

  // "attrs", "attr" and "param" merged into one dict, as nnvm's reader does
  // ("param", the 0.8 spelling of op parameters, never overrides the others).
  ParamDict ReadDict(const Json& jn, const std::string& label) const {
    ParamDict dict;
    for (const char* key : {"attrs", "attr", "param"}) {
      auto it = jn.find(key);
      if (it == jn.end()) continue;
      TS_CHECK(it->is_object()) << source_ << ": " << label << ": \"" << key
                                << "\" is not an object";
      for (const auto& [k, v] : it->items()) {
        TS_CHECK(v.is_string()) << source_ << ": " << label << ": attribute \"" << k << "\" is "
                                << Short(v) << ", not a string";
        if (std::string_view(key) == "param") {
          dict.emplace(k, v.get<std::string>());
        } else {
          dict.insert_or_assign(k, v.get<std::string>());
        }
      }
    }
    return dict;
  }

  NodePtr BuildNode(size_t id, const Json& jn, const std::string& name,
                    const std::string& op_name) {
    const std::string label = NodeLabel(id, name, op_name);
    auto fail = [&](const Error& e) { TS_THROW << source_ << ": " << label << ": " << e.what(); };
    const Json& jinputs = Field(jn, "inputs", label);
    TS_CHECK(jinputs.is_array()) << source_ << ": " << label << ": \"inputs\" is not an array";
    ParamDict dict = ReadDict(jn, label);

    // Plain hidden keys leave the dict before parsing (the op's parser would
    // reject them) and come back as "__key__" afterwards.
    std::vector<std::pair<std::string, std::string>> hidden;
    if (version_ < kMXNetVersion) {
      for (auto it = dict.begin(); it != dict.end();) {
        if (IsPlainHiddenKey(it->first)) {
          hidden.emplace_back(it->first, it->second);
          it = dict.erase(it);
        } else {
          ++it;
        }
      }
    }

    NodePtr n;
    if (op_name == "null") {
      TS_CHECK(jinputs.empty()) << source_ << ": " << label << ": a variable has inputs";
      try {
        n = Symbol::Variable(name, std::move(dict)).outputs.at(0).node;
      } catch (const Error& e) {
        fail(e);
      }
    } else {
      const op::Op* op = op::Op::Find(op_name);
      if (version_ < 905 && (op->name() == "argmax" || op->name() == "argmin")) {
        auto axis = dict.find("axis");
        if (axis != dict.end() && axis->second == "-1") dict.erase(axis);
      }
      n = Node::Create();
      n->attrs.name = name;
      n->attrs.dict = std::move(dict);
      try {
        op->ParseAttrs(&n->attrs);
      } catch (const Error& e) {
        fail(e);
      }
      for (size_t k = 0; k < jinputs.size(); ++k)
        n->inputs.push_back(ReadEntry(jinputs[k], id, label + ", input " + std::to_string(k)));
      ReadSubgraphs(jn, label, n.get());
    }
    // The node's own hidden keys ("lr_mult") before the upgrade adds
    // auxiliary variables, which inherit them; an input's ("weight_lr_mult")
    // after, so that it reaches an input the upgrade adds. Restored before,
    // it stayed on the node, and the file saved again moved it to the input
    // on the next load.
    auto restore_hidden = [&](bool own) {
      for (const auto& [key, value] : hidden)
        if (IsOwnHiddenKey(key) == own) RestoreHiddenKey(n.get(), key, value);
    };
    restore_hidden(true);

    if (!n->is_variable()) {
      try {
        if (version_ < 900) AddAuxVariables(n.get());
        const uint32_t want = n->num_inputs();
        TS_CHECK(n->inputs.size() == want)
            << "has " << n->inputs.size() << " input(s), but " << n->op()->name()
            << " with these parameters takes " << want;
      } catch (const Error& e) {
        fail(e);
      }
    }

    restore_hidden(false);

    if (auto it = jn.find("control_deps"); it != jn.end()) {
      TS_CHECK(it->is_array()) << source_ << ": " << label << ": \"control_deps\" is not an array";
      for (const Json& d : *it) {
        const uint32_t dep = Index(d, label + ", control dependency");
        TS_CHECK(dep < id) << source_ << ": " << label << ": control dependency " << dep
                           << " does not come before it";
        n->control_deps.push_back(built_[dep]);
      }
    }
    return n;
  }

  // A control-flow node's subgraphs, each a graph of its own, checked
  // against the node's parameters (control_flow_params.h).
  void ReadSubgraphs(const Json& jn, const std::string& label, Node* n) const {
    auto it = jn.find("subgraphs");
    if (it != jn.end()) {
      TS_CHECK(it->is_array()) << source_ << ": " << label << ": \"subgraphs\" is not an array";
      for (size_t k = 0; k < it->size(); ++k) {
        Loader sub(source_ + ": " + label + ", subgraph " + std::to_string(k), version_);
        auto sg = std::make_shared<op::Subgraph>();
        sg->outputs = sub.LoadGraph((*it)[k], "the subgraph").outputs;
        n->attrs.subgraphs.push_back(std::move(sg));
      }
    }
    if (!IsControlFlowOp(n->op())) {
      TS_CHECK(n->attrs.subgraphs.empty())
          << source_ << ": " << label << ": has subgraphs, which only _foreach, _while_loop and "
          << "_cond take in this build";
      return;
    }
    try {
      if (n->op()->name() == "_foreach") CheckForeach(n->attrs);
      if (n->op()->name() == "_while_loop") CheckWhileLoop(n->attrs);
      if (n->op()->name() == "_cond") CheckCond(n->attrs);
    } catch (const Error& e) {
      TS_THROW << source_ << ": " << label << ": " << e.what();
    }
  }

  // MXNet's test: the key starts with a hidden key or ends with one
  // ("lr_mult", "weight_lr_mult"; not "__lr_mult__").
  static bool IsPlainHiddenKey(std::string_view key) {
    for (std::string_view h : kHiddenKeys) {
      const size_t pos = key.rfind(h);
      if (pos == 0 || (pos != std::string_view::npos && pos == key.size() - h.size())) return true;
    }
    return false;
  }

  static bool IsOwnHiddenKey(std::string_view key) {
    for (std::string_view h : kHiddenKeys)
      if (key == h) return true;
    return false;
  }

  static void RestoreHiddenKey(Node* n, const std::string& key, const std::string& value) {
    for (std::string_view h : kHiddenKeys) {
      const size_t pos = key.rfind(h);
      if (pos == 0 && key.size() == h.size()) {
        n->attrs.dict["__" + std::string(h) + "__"] = value;
        return;
      }
      if (pos != std::string::npos && pos > 1 && pos == key.size() - h.size()) {
        // "<input>_<key>" on an op: the attribute of that input's variable.
        if (n->is_variable()) break;
        const std::vector<std::string> args = InputNames(n->attrs);
        const std::string arg = key.substr(0, pos - 1);
        for (size_t i = 0; i < args.size() && i < n->inputs.size(); ++i) {
          if (args[i] == arg && n->inputs[i].node->is_variable()) {
            n->inputs[i].node->attrs.dict["__" + std::string(h) + "__"] = value;
            return;
          }
        }
        break;
      }
    }
    n->attrs.dict[key] = value;
  }

  // Files before 0.9 left auxiliary states out; they become variables named
  // after the node and the input (batchnorm0_moving_mean), carrying the
  // node's hidden attributes (its context group, say), and marked written
  // (version 1) where the op mutates them, as a freshly composed graph is.
  static void AddAuxVariables(Node* n) {
    static const auto& mutate = op::Op::GetAttr<op::FMutateInputs>("FMutateInputs");
    const uint32_t want = n->num_inputs();
    if (n->inputs.size() >= want) return;
    const std::vector<std::string> args = InputNames(n->attrs);
    TS_CHECK(args.size() >= want) << "its op lists " << args.size() << " input names for " << want
                                  << " inputs";
    std::vector<uint32_t> mutated;
    if (mutate.contains(n->op())) mutated = mutate[n->op()](n->attrs);
    ParamDict hidden;
    for (const auto& [k, v] : n->attrs.dict)
      if (k.size() > 4 && k.starts_with("__") && k.ends_with("__")) hidden.emplace(k, v);
    for (size_t i = n->inputs.size(); i < want; ++i) {
      const std::string name = n->attrs.name.empty() ? args[i] : n->attrs.name + "_" + args[i];
      NodeEntry e = Symbol::Variable(name, hidden).outputs.at(0);
      for (uint32_t m : mutated) e.version = m == i ? 1 : e.version;
      n->inputs.push_back(std::move(e));
    }
  }

  std::string source_;
  int version_ = kMXNetLegacyVersion;
  size_t num_nodes_ = 0;
  std::vector<NodePtr> built_;
};

}  // namespace

Symbol LoadJSON(std::string_view text, std::string_view source, int* mxnet_version) {
  try {
    return Loader(source).Load(text, mxnet_version);
  } catch (const nlohmann::json::exception& e) {
    // Every access is checked first; this only keeps a slip from escaping as
    // something other than a tessera::Error.
    TS_THROW << source << ": " << e.what();
  }
}

}  // namespace tessera::graph
