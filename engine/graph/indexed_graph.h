// A graph frozen into arrays for passes: nodes numbered in topological
// order, every output of every node ("entry") numbered by
// entry_id(node, index). Passes keep per-node or per-entry vectors indexed by
// these numbers instead of maps keyed by pointers (NNVM's IndexedGraph).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "engine/op/node.h"

namespace tessera::graph {

using op::Node;
using op::NodeEntry;
using op::NodePtr;

class IndexedGraph {
 public:
  struct Entry {
    uint32_t node_id = 0;
    uint32_t index = 0;
  };
  struct NodeInfo {
    NodePtr node;
    std::vector<Entry> inputs;
    std::vector<uint32_t> control_deps;
  };

  explicit IndexedGraph(const std::vector<NodeEntry>& outputs);

  size_t num_nodes() const { return nodes_.size(); }
  size_t num_entries() const { return row_ptr_.back(); }
  const NodeInfo& operator[](uint32_t node_id) const { return nodes_[node_id]; }
  // The id of `node`; an error when it is not in the graph.
  uint32_t node_id(const Node* node) const;
  bool contains(const Node* node) const { return ids_.count(node) != 0; }
  uint32_t entry_id(uint32_t node_id, uint32_t index) const { return row_ptr_[node_id] + index; }
  uint32_t entry_id(const Entry& e) const { return entry_id(e.node_id, e.index); }
  uint32_t entry_id(const NodeEntry& e) const { return entry_id(node_id(e.node.get()), e.index); }
  // Variable nodes, in topological order.
  const std::vector<uint32_t>& input_nodes() const { return input_nodes_; }
  // True for variables some op writes (auxiliary states).
  bool is_mutable_input(uint32_t node_id) const { return mutable_[node_id]; }
  const std::vector<Entry>& outputs() const { return outputs_; }

 private:
  std::vector<NodeInfo> nodes_;
  std::vector<uint32_t> row_ptr_;
  std::unordered_map<const Node*, uint32_t> ids_;
  std::vector<uint32_t> input_nodes_;
  std::vector<bool> mutable_;
  std::vector<Entry> outputs_;
};

}  // namespace tessera::graph
