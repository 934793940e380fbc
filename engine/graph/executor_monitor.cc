// Monitoring (Executor::SetMonitorCallback): every node pushed on its own,
// then its arrays handed to the callback by name, as MXNet's executor calls
// its monitor callback after each op. Work the callback pushes on an array
// is ordered after the node that writes it and before any later node that
// reuses its memory, by the array's engine variable.
#include "engine/graph/graph_executor.h"
#include "engine/graph/input_names.h"

namespace tessera::graph {

void GraphExecutor::SetMonitorCallback(MonitorFn fn, bool all) {
  monitor_ = std::move(fn);
  monitor_all_ = all;
}

void GraphExecutor::PushMonitored(const std::vector<uint32_t>& nodes, bool is_train) const {
  const IndexedGraph& g = *idx_;
  for (uint32_t nid : nodes) {
    const auto& exec = ops_[nid];
    const op::NodeAttrs& attrs = exec->node->attrs;
    if (monitor_all_) {
      const std::vector<std::string> names = InputNames(attrs);
      const auto& inputs = g[nid].inputs;
      for (size_t i = 0; i < inputs.size(); ++i)
        monitor_(attrs.name + "_" + (i < names.size() ? names[i] : "arg" + std::to_string(i)),
                 RowMajorArray(g.entry_id(inputs[i])));
    }
    Push(exec, is_train);
    const std::vector<std::string> names = OutputNames(attrs);
    const size_t n = std::min<size_t>(names.size(), exec->node->num_outputs());
    for (uint32_t o = 0; o < n; ++o)
      monitor_(attrs.name + "_" + names[o], RowMajorArray(g.entry_id(nid, o)));
  }
}

}  // namespace tessera::graph
