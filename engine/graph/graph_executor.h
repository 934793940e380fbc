// GraphExecutor: the Executor of executor.h (MXNet's GraphExecutor in our
// own code). The work is split by idea:
//   executor_bind.cc     the full graph (forward + gradient), inference, arrays
//   executor_memory.cc   the memory plan and the storage blocks
//   executor_layout.cc   which planned arrays stay in oneDNN's blocked layout
//   executor_ops.cc      one engine push per node: kernels, states, resources
//   executor_run.cc      Forward, Backward
//   executor_reshape.cc  SimpleBind's and Reshape's shape inference, Reshape
//   executor_debug.cc    DebugStr
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/graph/executor.h"
#include "engine/graph/indexed_graph.h"
#include "engine/graph/plan_memory.h"
#include "engine/ndarray/op_call.h"

namespace tessera::graph {

// TESSERA_BLOCKED_LAYOUT (default 1): executors bound from now on keep
// arrays between oneDNN-backed ops in the blocked layout; 0 keeps every
// array row-major. SetBlockedLayout overrides it and returns the old value.
bool BlockedLayoutEnabled();
bool SetBlockedLayout(bool on);

class GraphExecutor final : public Executor {
 public:
  // Binds (see Executor::Bind). `shared_blocks`: storage of an executor this
  // one replaces (Reshape); blocks big enough are reused instead of allocated.
  GraphExecutor(const Symbol& sym, Context ctx, std::vector<NDArray> args,
                std::vector<NDArray> arg_grads, std::vector<OpReqType> grad_req,
                std::vector<NDArray> aux, const std::vector<NDArray>& shared_blocks = {});
  ~GraphExecutor() override;

  void Forward(bool is_train) override;
  void Backward(const std::vector<NDArray>& head_grads) override;
  void SetMonitorCallback(MonitorFn fn, bool all) override;

  const Symbol& symbol() const override { return sym_; }
  const std::vector<NDArray>& outputs() const override { return outputs_; }
  const std::vector<NDArray>& arg_arrays() const override { return args_; }
  const std::vector<NDArray>& grad_arrays() const override { return grads_; }
  const std::vector<OpReqType>& grad_req() const override { return grad_req_; }
  const std::vector<NDArray>& aux_arrays() const override { return aux_; }
  Context ctx() const override { return ctx_; }

  std::unique_ptr<Executor> Reshape(const std::map<std::string, Shape>& shapes) const override;
  std::string DebugStr() const override;
  size_t planned_bytes() const override { return plan_.planned_bytes; }
  size_t unshared_bytes() const override { return plan_.unshared_bytes; }

  // For tests and DebugStr: the plan, the graph it is over, and how many
  // entries it placed (entries that got a storage id).
  const MemoryPlan& plan() const { return plan_; }
  const IndexedGraph& graph() const { return *idx_; }
  size_t num_planned_entries() const;
  // Entries kept in the channel-blocked layout (executor_layout.cc), and
  // the layout of each.
  size_t num_blocked_entries() const;
  const std::vector<MemLayout>& entry_layouts() const { return layouts_; }
  // The storage blocks, one per storage id.
  const std::vector<NDArray>& blocks() const { return blocks_; }
  const std::vector<NDArray>& storage_blocks() const override { return blocks_; }

  // Bulking: up to `n` consecutive nodes (forward, and backward, apart) run
  // in one engine push; 1 turns it off. Default TESSERA_EXEC_BULK_SIZE, 1.
  // Results are the same either way; bulks save engine overhead on chains
  // of small ops, at the cost of finer-grained overlap and profiling.
  void set_bulk_size(int n);
  int bulk_size() const { return bulk_size_; }

  // One node ready to push: the kernel call and everything around it,
  // shared with the pushed closures so the executor may go away while they
  // run. Ops computing on NDArrays (custom ops, call.kernel.fstate_ex) are
  // never bulked: their code pushes further work.
  struct OpExec {
    op::NodePtr node;
    opcall::KernelCall call;
    std::vector<op::Resource> resources;  // temp space requested at bind
    std::vector<size_t> random_slots;     // resources drawn again at each push
    std::vector<VarHandle> const_vars, mutate_vars;
    const char* name = nullptr;
  };
  // Nodes pushed together, with the union of their variables.
  struct Segment {
    std::vector<std::shared_ptr<const OpExec>> ops;
    std::vector<VarHandle> const_vars, mutate_vars;
    const char* name = nullptr;
  };

 private:
  // executor_bind.cc
  void ExpandControlFlowNodes();
  void BuildGraph();
  void InferShapesAndTypes();
  void CheckBoundArrays() const;
  // executor_memory.cc
  void PlanAndAllocate(const std::vector<NDArray>& shared_blocks);
  // executor_layout.cc
  void ChooseLayouts();
  NDArray RowMajorArray(uint32_t e) const;
  // executor_ops.cc
  void InitOps();
  // executor_run.cc
  void Push(const std::shared_ptr<const OpExec>& exec, bool is_train) const;
  void Push(const Segment& seg, bool is_train) const;
  // executor_monitor.cc: `nodes` pushed one by one, each followed by the
  // monitor callback on its outputs (and inputs).
  void PushMonitored(const std::vector<uint32_t>& nodes, bool is_train) const;
  std::vector<Segment> MakeSegments(const std::vector<uint32_t>& nodes) const;

  Symbol sym_;
  // sym_'s outputs with its control-flow nodes expanded (control_flow.h):
  // the graph that runs. The same entries as sym_.outputs without any.
  std::vector<NodeEntry> graph_outputs_;
  Context ctx_;
  std::vector<NDArray> args_, grads_, aux_, outputs_;
  std::vector<OpReqType> grad_req_;

  // The graph: forward outputs, then the gradient of each argument with a
  // request (grad_entries_[k] for argument grad_args_[k]).
  std::vector<NodeEntry> heads_;
  std::vector<uint32_t> grad_args_;
  std::vector<NodePtr> head_grad_nodes_;  // one variable per output
  std::unique_ptr<IndexedGraph> idx_;
  std::vector<uint32_t> arg_nids_, aux_nids_;             // node ids
  std::vector<uint32_t> forward_nodes_, backward_nodes_;  // op nodes in run order
  std::vector<bool> is_forward_;                          // per node

  std::vector<Shape> shapes_;         // per entry
  std::vector<DType> types_;          // per entry
  std::vector<bool> external_;        // per entry: not planned
  std::vector<OpReqType> entry_req_;  // per entry: how its producer writes it
  MemoryPlan plan_;
  std::vector<NDArray> blocks_;            // one per storage id
  std::vector<NDArray> entry_arrays_;      // per entry (none: never written nor read)
  std::vector<MemLayout> layouts_;         // per entry: the order its kernels see
  std::vector<NDArray> head_grad_arrays_;  // per output (none where unused)

  std::vector<std::shared_ptr<const OpExec>> ops_;  // per node (null for variables)
  MonitorFn monitor_;  // set: nodes push one by one, each followed by the callback
  bool monitor_all_ = false;
  // The last Forward had is_train = true and no Backward has used it yet.
  bool trained_forward_ = false;
  int bulk_size_ = 1;
  std::vector<Segment> forward_segments_, backward_segments_;
};

}  // namespace tessera::graph
