// One ready-to-push call per node, prepared once at bind through the op-call
// steps (engine/ndarray/op_call.h): the kernel for the device, the op state
// (stateful ops), the resources, the data pointers of its views and the
// engine variables it reads and writes.
#include "engine/graph/graph_executor.h"

namespace tessera::graph {

void GraphExecutor::InitOps() {
  using op::Op;
  static const auto& is_backward = Op::GetAttr<op::TIsBackward>("TIsBackward");
  const IndexedGraph& g = *idx_;

  ops_.assign(g.num_nodes(), nullptr);
  // Node ids are topological, so a forward node's state exists before the
  // backward node that may borrow it.
  for (uint32_t nid = 0; nid < g.num_nodes(); ++nid) {
    const auto& info = g[nid];
    const NodePtr& node = info.node;
    if (node->is_variable()) continue;
    const Op* op = node->op();
    auto exec = std::make_shared<OpExec>();
    exec->node = node;
    exec->name = op->name().c_str();  // the registry outlives every push
    const opcall::OpOnDevice on = opcall::LookUpOp(node->attrs, ctx_.is_gpu());
    opcall::CheckKernel(on, node->attrs, ctx_, "bind: ");
    opcall::KernelCall& call = exec->call;
    call.kernel = on.kernel;
    call.attrs = &node->attrs;  // exec->node keeps it

    std::vector<Shape> in_shapes;
    std::vector<DType> in_types;
    for (const auto& in : info.inputs) {
      in_shapes.push_back(shapes_[g.entry_id(in)]);
      in_types.push_back(types_[g.entry_id(in)]);
    }
    // Created once here, as MXNet does; a backward op without a creator of
    // its own shares its forward node's state (control_deps[0]).
    op::OpStatePtr forward_state;
    if (is_backward.get(op, false) && !node->control_deps.empty() &&
        g.contains(node->control_deps[0].get()))
      if (const auto& fwd = ops_[g.node_id(node->control_deps[0].get())])
        forward_state = fwd->call.state;
    call.state =
        opcall::CreateState(on, node->attrs, ctx_, in_shapes, in_types, forward_state, "bind: ");

    // Temp space once, at bind; random streams again at every push, so each
    // forward draws new numbers.
    opcall::RequestResources(on, node->attrs, ctx_, &exec->resources, &exec->random_slots);

    // Only an op that declared it sees a blocked array (executor_layout.cc).
    const bool layouts = Op::GetAttr<op::FLayoutClasses>("FLayoutClasses").contains(op);
    for (const auto& in : info.inputs) {
      const NDArray& a = entry_arrays_[g.entry_id(in)];
      call.in.push_back(a.data());
      call.in.back().layout_ = layouts_[g.entry_id(in)];
      TS_DCHECK(layouts || !call.in.back().channel_blocked());
      if (on.kernel.fstate_ex) call.in_arrays.push_back(a);
      exec->const_vars.push_back(a.var());
    }
    for (uint32_t o = 0; o < node->num_outputs(); ++o) {
      const uint32_t e = g.entry_id(nid, o);
      const NDArray& a = entry_arrays_[e];
      TS_DCHECK(!a.is_none());  // the memory plan gives every output an array
      call.out.push_back(a.data());
      call.out.back().layout_ = layouts_[e];
      TS_DCHECK(layouts || !call.out.back().channel_blocked());
      if (on.kernel.fstate_ex) call.out_arrays.push_back(a);
      call.req.push_back(entry_req_[e]);
      exec->mutate_vars.push_back(a.var());
      // Accumulated into (grad_req add) or left alone: updated, so read too
      // (the engine's poison rule). Planned entries are otherwise written
      // whole before any node reads them.
      if (entry_req_[e] == kAddTo || entry_req_[e] == kNullOp) exec->const_vars.push_back(a.var());
    }
    opcall::AddMutatedInputs(
        on, node->attrs, info.inputs.size(),
        [&](uint32_t i) { return entry_arrays_[g.entry_id(info.inputs[i])].var(); },
        &exec->mutate_vars);
    if (call.state) exec->mutate_vars.push_back(call.state.var());
    ops_[nid] = std::move(exec);
  }
}

}  // namespace tessera::graph
