// DebugStr: the nodes in run order with their inputs, output shapes and
// storage, then the plan's totals against the plan without sharing.
#include <cstdio>
#include <sstream>

#include "engine/graph/graph_executor.h"

namespace tessera::graph {

std::string GraphExecutor::DebugStr() const {
  const IndexedGraph& g = *idx_;
  std::ostringstream os;
  os << "Executor on " << ctx_.ToString() << ": " << forward_nodes_.size() << " forward and "
     << backward_nodes_.size() << " backward nodes, " << g.num_entries() << " entries\n";
  auto entry_name = [&](const IndexedGraph::Entry& e) {
    const Node& n = *g[e.node_id].node;
    if (n.is_variable() || n.num_outputs() == 1) return n.attrs.name;
    return n.attrs.name + ":" + std::to_string(e.index);
  };
  auto storage = [&](uint32_t e) -> std::string {
    if (entry_req_[e] == kNullOp) return "not computed";
    const int sid = plan_.storage_id[e];
    if (sid >= 0) return "storage " + std::to_string(sid) + (plan_.inplace[e] ? " inplace" : "");
    if (entry_req_[e] == kAddTo) return "external add";
    return "external";
  };
  for (const auto* list : {&forward_nodes_, &backward_nodes_}) {
    os << (list == &forward_nodes_ ? "forward:\n" : "backward:\n");
    for (uint32_t nid : *list) {
      const Node& n = *g[nid].node;
      os << "  #" << nid << " " << n.attrs.name << " (" << n.op()->name() << ") <- [";
      for (size_t i = 0; i < g[nid].inputs.size(); ++i)
        os << (i ? ", " : "") << entry_name(g[nid].inputs[i]);
      os << "] ->";
      for (uint32_t o = 0; o < n.num_outputs(); ++o) {
        const uint32_t e = g.entry_id(nid, o);
        os << (o ? ";" : "") << " " << shapes_[e] << " " << DTypeName(types_[e]) << " ["
           << storage(e) << (layouts_[e] == MemLayout::kNChw16c ? ", nChw16c" : "") << "]";
      }
      // Temp space is not planned here: ops take it from the device's
      // shared, growable scratch (engine/resource/temp_space.h) while they run.
      const auto& exec = *ops_[nid];
      if (exec.resources.size() > exec.random_slots.size()) os << " +temp";
      if (!exec.random_slots.empty()) os << " +random";
      os << "\n";
    }
  }
  char pct[32];
  std::snprintf(pct, sizeof(pct), "%.1f%%",
                plan_.unshared_bytes ? 100.0 * plan_.planned_bytes / plan_.unshared_bytes : 100.0);
  os << "planned: " << FormatBytes(plan_.planned_bytes) << " in " << plan_.num_storage()
     << " blocks, unshared: " << FormatBytes(plan_.unshared_bytes) << " for "
     << num_planned_entries() << " entries (" << pct << ")";
  if (const size_t blocked = num_blocked_entries())
    os << ", " << blocked << " in oneDNN's blocked layout";
  os << "\n";
  return os.str();
}

}  // namespace tessera::graph
