// Writing symbol JSON (json.h), and the symbol-file helpers.
//
// The text must match dmlc's JSONWriter byte for byte, since that is what
// wrote every MXNet file: objects and arrays open on the current line;
// a "multi-line" scope puts each item on a new line indented two spaces per
// open scope, after a ", " (so lines end in ", " with a trailing space); the
// closing bracket goes on its own line unless the scope is empty. Which
// scopes are multi-line is dmlc's rule: node objects and the graph always,
// string maps with more than one key, arrays of numbers or of [node, index,
// version] triples with more than ten items, never the triples themselves.
#include "engine/graph/json.h"

#include "engine/base/atomic_file.h"
#include "engine/base/regular_file.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <unordered_map>
#include <vector>

#include "engine/base/error.h"

namespace tessera::graph {

namespace {

class DmlcJsonWriter {
 public:
  explicit DmlcJsonWriter(std::string* out) : out_(out) {}

  void BeginObject(bool multi_line) { Open('{', multi_line); }
  void EndObject() { Close('}'); }
  void BeginArray(bool multi_line) { Open('[', multi_line); }
  void EndArray() { Close(']'); }

  // Starts the value of `key` in the current object.
  void Key(std::string_view key) {
    Item();
    String(key);
    *out_ += ": ";
  }
  // Starts the next item of the current array.
  void Item() {
    if (scopes_.back().count++ > 0) *out_ += ", ";
    Separator();
  }

  void String(std::string_view s) {
    *out_ += '"';
    for (char c : s) {
      switch (c) {
        case '\r':
          *out_ += "\\r";
          break;
        case '\n':
          *out_ += "\\n";
          break;
        case '\t':
          *out_ += "\\t";
          break;
        case '\\':
          *out_ += "\\\\";
          break;
        case '"':
          *out_ += "\\\"";
          break;
        default:
          // dmlc writes other control characters raw, which no strict JSON
          // reader (ours included) accepts; escaping them keeps the round trip.
          if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
            *out_ += buf;
          } else {
            *out_ += c;
          }
      }
    }
    *out_ += '"';
  }
  void Number(int64_t v) { *out_ += std::to_string(v); }

  void StringMap(const ParamDict& map) {
    BeginObject(map.size() > 1);
    for (const auto& [k, v] : map) {
      Key(k);
      String(v);
    }
    EndObject();
  }
  void NumberArray(const std::vector<uint32_t>& values) {
    BeginArray(values.size() > 10);
    for (uint32_t v : values) {
      Item();
      Number(v);
    }
    EndArray();
  }
  struct Triple {
    uint32_t node, index, version;
  };
  void TripleArray(const std::vector<Triple>& values) {
    BeginArray(values.size() > 10);
    for (const Triple& t : values) {
      Item();
      BeginArray(false);
      for (uint32_t v : {t.node, t.index, t.version}) {
        Item();
        Number(v);
      }
      EndArray();
    }
    EndArray();
  }

 private:
  struct Scope {
    bool multi_line;
    size_t count;
  };
  void Open(char c, bool multi_line) {
    *out_ += c;
    scopes_.push_back({multi_line, 0});
  }
  void Close(char c) {
    const Scope s = scopes_.back();
    scopes_.pop_back();
    if (s.multi_line && s.count != 0) Separator();
    *out_ += c;
  }
  void Separator() {
    if (scopes_.empty() || scopes_.back().multi_line) {
      *out_ += '\n';
      out_->append(scopes_.size() * 2, ' ');
    }
  }

  std::string* out_;
  std::vector<Scope> scopes_;
};

// The name MXNet registers an op under, where this project's primary name is
// one of MXNet's aliases: MXNet writes its primary name, so a file it saved
// only re-saves identically under that spelling. Used only while the name
// still resolves to the same op here.
const std::string& MXNetOpName(const op::Op* op) {
  static const std::map<std::string, std::string, std::less<>> kPrimary = {
      {"flatten", "Flatten"},    {"reshape", "Reshape"}, {"concat", "Concat"},
      {"split", "SliceChannel"}, {"identity", "_copy"},
  };
  auto it = kPrimary.find(op->name());
  if (it != kPrimary.end() && op::Op::Find(it->second) == op) return it->second;
  return op->name();
}

}  // namespace

namespace {

// One graph: nodes in topological order, then arg_nodes, node_row_ptr, heads
// and, for the top graph, the version. A control-flow node's subgraphs go
// inside it, each a graph of its own ("subgraphs", as nnvm writes them).
void WriteGraph(DmlcJsonWriter& w, const std::vector<NodeEntry>& outputs,
                const int* mxnet_version) {
  for (const NodeEntry& e : outputs) TS_CHECK(e.node) << "save: the symbol has an empty output";
  std::vector<NodePtr> nodes;
  std::unordered_map<const Node*, uint32_t> ids;
  DFSVisit(outputs, [&](const NodePtr& n) {
    ids.emplace(n.get(), static_cast<uint32_t>(nodes.size()));
    nodes.push_back(n);
  });
  auto triples = [&](const std::vector<NodeEntry>& entries) {
    std::vector<DmlcJsonWriter::Triple> out;
    for (const NodeEntry& e : entries) out.push_back({ids.at(e.node.get()), e.index, e.version});
    return out;
  };

  w.BeginObject(true);
  w.Key("nodes");
  w.BeginArray(true);
  std::vector<uint32_t> arg_nodes, row_ptr{0};
  for (const NodePtr& n : nodes) {
    const uint32_t id = static_cast<uint32_t>(row_ptr.size() - 1);
    if (n->is_variable()) arg_nodes.push_back(id);
    row_ptr.push_back(row_ptr.back() + n->num_outputs());
    w.Item();
    w.BeginObject(true);
    w.Key("op");
    w.String(n->is_variable() ? "null" : MXNetOpName(n->op()));
    w.Key("name");
    w.String(n->attrs.name);
    if (!n->attrs.dict.empty()) {
      w.Key("attrs");
      w.StringMap(n->attrs.dict);
    }
    w.Key("inputs");
    w.TripleArray(triples(n->inputs));
    if (!n->control_deps.empty()) {
      std::vector<uint32_t> deps;
      for (const NodePtr& d : n->control_deps) deps.push_back(ids.at(d.get()));
      w.Key("control_deps");
      w.NumberArray(deps);
    }
    if (!n->attrs.subgraphs.empty()) {
      w.Key("subgraphs");
      w.BeginArray(true);
      for (const auto& sg : n->attrs.subgraphs) {
        TS_CHECK(sg) << "save: node '" << n->attrs.name << "' has an empty subgraph";
        w.Item();
        WriteGraph(w, sg->outputs, nullptr);
      }
      w.EndArray();
    }
    w.EndObject();
  }
  w.EndArray();
  w.Key("arg_nodes");
  w.NumberArray(arg_nodes);
  w.Key("node_row_ptr");
  w.NumberArray(row_ptr);
  w.Key("heads");
  w.TripleArray(triples(outputs));
  if (mxnet_version) {
    // dmlc writes a graph attribute as [type name, value].
    w.Key("attrs");
    w.BeginObject(false);
    w.Key("mxnet_version");
    w.BeginArray(false);
    w.Item();
    w.String("int");
    w.Item();
    w.Number(*mxnet_version);
    w.EndArray();
    w.EndObject();
  }
  w.EndObject();
}

}  // namespace

std::string SaveJSON(const Symbol& symbol, int mxnet_version) {
  std::string out;
  DmlcJsonWriter w(&out);
  WriteGraph(w, symbol.outputs, &mxnet_version);
  return out;
}

void SaveSymbolFile(const Symbol& symbol, const std::string& path, int mxnet_version) {
  // Serialise first: a symbol that cannot be saved never touches the file.
  WriteFileAtomically(path, SaveJSON(symbol, mxnet_version), "save");
}

Symbol LoadSymbolFile(const std::string& path, int* mxnet_version) {
  // Never blocks on a FIFO, and refuses directories and devices by name.
  uint64_t size = 0;
  const int fd = OpenRegularFile(path, "load", &size);
  std::string text;
  text.reserve(size);
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? ErrnoMessage() : "";
      ::close(fd);
      TS_CHECK(n == 0) << "load: cannot read " << path << ": " << why;
      break;
    }
    text.append(buf, static_cast<size_t>(n));
  }
  return LoadJSON(text, path, mxnet_version);
}

}  // namespace tessera::graph
