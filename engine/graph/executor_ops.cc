// One ready-to-push call per node, prepared once at bind: the kernel for the
// device, the op state (stateful ops), the resources, the data pointers of
// its views and the engine variables it reads and writes.
#include "engine/graph/graph_executor.h"
#include "ops/registry/op_attr_ndarray.h"

namespace tessera::graph {

void GraphExecutor::InitOps() {
  using op::Op;
  static const auto& fcreate = Op::GetAttr<op::FCreateOpState>("FCreateOpState");
  static const auto& fresource = Op::GetAttr<op::FResourceRequest>("FResourceRequest");
  static const auto& fmutate = Op::GetAttr<op::FMutateInputs>("FMutateInputs");
  static const auto& is_backward = Op::GetAttr<op::TIsBackward>("TIsBackward");
  const IndexedGraph& g = *idx_;
  const bool on_gpu = ctx_.is_gpu();

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
    const op::DeviceKernel kernel = op::FindDeviceKernel(node->attrs, on_gpu);
    exec->fcompute = kernel.fcompute;
    exec->fstate = kernel.fstate;
    exec->fstate_ex = kernel.fstate_ex;
    exec->is_async = kernel.is_async;
    if (!kernel.found()) {
      if (on_gpu && !BuiltWithCUDA())
        TS_THROW << "bind: node '" << node->attrs.name << "' (" << op->name() << ") on "
                 << ctx_.ToString() << ": this build has no CUDA";
      TS_THROW << "bind: node '" << node->attrs.name << "' (" << op->name() << ") has no "
               << (on_gpu ? "GPU" : "CPU") << " implementation";
    }

    std::vector<Shape> in_shapes;
    std::vector<DType> in_types;
    for (const auto& in : info.inputs) {
      in_shapes.push_back(shapes_[g.entry_id(in)]);
      in_types.push_back(types_[g.entry_id(in)]);
    }
    if (exec->fstate || exec->fstate_ex) {
      // Created once here, as MXNet does; a backward op without a creator of
      // its own shares its forward node's state (control_deps[0]).
      if (const op::FCreateOpState* fc = fcreate.find(op)) {
        exec->state = (*fc)(node->attrs, ctx_, in_shapes, in_types);
      } else if (is_backward.get(op, false) && !node->control_deps.empty() &&
                 g.contains(node->control_deps[0].get())) {
        const auto& fwd = ops_[g.node_id(node->control_deps[0].get())];
        if (fwd) exec->state = fwd->state;
      }
      TS_CHECK(exec->state) << "bind: node '" << node->attrs.name << "' (" << op->name()
                            << ") is stateful but has no state (FCreateOpState)";
    }

    // Temp space once, at bind; random streams again at every push, so each
    // forward draws new numbers.
    if (const op::FResourceRequest* fr = fresource.find(op))
      for (const auto& r : (*fr)(node->attrs)) {
        if (r.type == storage::ResourceRequest::kRandom)
          exec->random_slots.push_back(exec->resources.size());
        exec->resources.push_back(storage::ResourceManager::Get()->Request(ctx_, r));
      }

    for (const auto& in : info.inputs) {
      const NDArray& a = entry_arrays_[g.entry_id(in)];
      exec->in.push_back(a.data());
      if (exec->fstate_ex) exec->in_arrays.push_back(a);
      exec->const_vars.push_back(a.var());
    }
    for (uint32_t o = 0; o < node->num_outputs(); ++o) {
      const uint32_t e = g.entry_id(nid, o);
      const NDArray& a = entry_arrays_[e];
      TS_CHECK(!a.is_none()) << "bind: internal: output " << o << " of node '" << node->attrs.name
                             << "' has no array";
      exec->out.push_back(a.data());
      if (exec->fstate_ex) exec->out_arrays.push_back(a);
      exec->req.push_back(entry_req_[e]);
      exec->mutate_vars.push_back(a.var());
    }
    if (const op::FMutateInputs* fm = fmutate.find(op))
      for (uint32_t i : (*fm)(node->attrs))
        if (i < info.inputs.size())
          exec->mutate_vars.push_back(entry_arrays_[g.entry_id(info.inputs[i])].var());
    if (exec->state) exec->mutate_vars.push_back(exec->state.var());
    ops_[nid] = std::move(exec);
  }
}

}  // namespace tessera::graph
