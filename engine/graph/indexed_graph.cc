#include "engine/graph/indexed_graph.h"

#include "engine/base/error.h"
#include "engine/graph/symbol.h"

namespace tessera::graph {

IndexedGraph::IndexedGraph(const std::vector<NodeEntry>& outputs) {
  row_ptr_.push_back(0);
  DFSVisit(outputs, [&](const NodePtr& n) {
    const uint32_t id = static_cast<uint32_t>(nodes_.size());
    ids_[n.get()] = id;
    NodeInfo info;
    info.node = n;
    for (const NodeEntry& e : n->inputs) info.inputs.push_back({ids_.at(e.node.get()), e.index});
    for (const NodePtr& d : n->control_deps) info.control_deps.push_back(ids_.at(d.get()));
    nodes_.push_back(std::move(info));
    row_ptr_.push_back(row_ptr_.back() + n->num_outputs());
    mutable_.push_back(false);
    if (n->is_variable()) input_nodes_.push_back(id);
    for (uint32_t i : MutableInputs(*n))
      if (i < n->inputs.size()) mutable_[ids_.at(n->inputs[i].node.get())] = true;
  });
  for (const NodeEntry& e : outputs) outputs_.push_back({ids_.at(e.node.get()), e.index});
}

uint32_t IndexedGraph::node_id(const Node* node) const {
  auto it = ids_.find(node);
  TS_CHECK(it != ids_.end()) << "graph: node '" << (node ? node->attrs.name : "(null)")
                             << "' is not in this graph";
  return it->second;
}

}  // namespace tessera::graph
