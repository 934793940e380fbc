#include "engine/graph/run_imperative.h"

#include <memory>

#include "engine/base/error.h"
#include "engine/graph/indexed_graph.h"
#include "engine/ndarray/imperative.h"

namespace tessera::graph {

std::vector<NDArray> RunImperative(const Symbol& sym, const std::map<std::string, NDArray>& args) {
  const IndexedGraph idx(sym.outputs);
  std::vector<std::vector<NDArray>> values(idx.num_nodes());
  for (uint32_t nid = 0; nid < idx.num_nodes(); ++nid) {
    const IndexedGraph::NodeInfo& info = idx[nid];
    const Node& node = *info.node;
    if (node.is_variable()) {
      auto it = args.find(node.attrs.name);
      TS_CHECK(it != args.end() && !it->second.is_none())
          << "run: no array given for variable '" << node.attrs.name << "'";
      values[nid] = {it->second};
      continue;
    }
    std::vector<NDArray> in;
    in.reserve(info.inputs.size());
    for (const IndexedGraph::Entry& e : info.inputs) in.push_back(values[e.node_id].at(e.index));
    Invoke(std::make_shared<op::NodeAttrs>(node.attrs), in, &values[nid]);
  }
  std::vector<NDArray> out;
  out.reserve(sym.outputs.size());
  for (const NodeEntry& e : sym.outputs)
    out.push_back(values[idx.node_id(e.node.get())].at(e.index));
  return out;
}

}  // namespace tessera::graph
