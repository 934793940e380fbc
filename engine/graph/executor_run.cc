// Forward and Backward: every node an engine push with its read and write
// variables, exactly like an imperative call, so the caller is never blocked
// and only waits when it reads an output or a gradient. With bulking, a few
// consecutive nodes share one push (the union of their variables).
#include <algorithm>

#include "engine/graph/graph_executor.h"
#include "engine/ndarray/imperative.h"

namespace tessera::graph {

namespace {

using OpExec = GraphExecutor::OpExec;

// The op's resources for one push: temp space as requested at bind, random
// streams new, so every forward draws new numbers.
std::vector<op::Resource> PushResources(const OpExec& exec, Context ctx) {
  std::vector<op::Resource> resources = exec.resources;
  for (size_t slot : exec.random_slots)
    resources[slot] =
        resource::ResourceManager::Get()->Request(ctx, resource::ResourceRequest::kRandom);
  return resources;
}

}  // namespace

void GraphExecutor::Push(const std::shared_ptr<const OpExec>& exec, bool is_train) const {
  opcall::PushOp(
      exec->call.kernel.is_async,
      [exec, is_train, resources = PushResources(*exec, ctx_)](const RunContext& rctx,
                                                               opcall::DoneFn done) {
        opcall::RunKernel(exec->call, op::OpContext{is_train, rctx, resources, std::move(done)});
      },
      ctx_, exec->const_vars, exec->mutate_vars, 0, exec->name);
}

void GraphExecutor::Push(const Segment& seg, bool is_train) const {
  if (seg.ops.size() == 1) return Push(seg.ops[0], is_train);
  std::vector<std::vector<op::Resource>> resources;
  for (const auto& exec : seg.ops) resources.push_back(PushResources(*exec, ctx_));
  engine::Engine::Get()->PushSync(
      [ops = seg.ops, is_train, resources = std::move(resources)](RunContext rctx) {
        for (size_t i = 0; i < ops.size(); ++i) {
          try {
            opcall::RunKernel(ops[i]->call, op::OpContext{is_train, rctx, resources[i], nullptr});
          } catch (const Error& e) {
            // The push is named after the bulk: say which node failed.
            throw Error("node '" + ops[i]->node->attrs.name + "' (" + ops[i]->name +
                        "): " + e.what());
          }
        }
      },
      ctx_, seg.const_vars, seg.mutate_vars, engine::FnProperty::kNormal, 0, seg.name);
}

std::vector<GraphExecutor::Segment> GraphExecutor::MakeSegments(
    const std::vector<uint32_t>& nodes) const {
  std::vector<Segment> segs;
  const size_t size = size_t(std::max(1, bulk_size_));
  for (size_t begin = 0, end; begin < nodes.size(); begin = end) {
    Segment seg;
    std::string name = "bulk(";
    // Ops computing on NDArrays go alone: their code pushes further work.
    auto alone = [&](size_t i) { return ops_[nodes[i]]->call.kernel.fstate_ex != nullptr; };
    end = begin + 1;
    if (!alone(begin))
      while (end < std::min(nodes.size(), begin + size) && !alone(end)) ++end;
    for (size_t i = begin; i < end; ++i) {
      const auto& exec = ops_[nodes[i]];
      seg.ops.push_back(exec);
      // A variable both read and written is taken as written by the engine.
      seg.const_vars.insert(seg.const_vars.end(), exec->const_vars.begin(), exec->const_vars.end());
      seg.mutate_vars.insert(seg.mutate_vars.end(), exec->mutate_vars.begin(),
                             exec->mutate_vars.end());
      name += (i == begin ? "" : ",") + exec->node->attrs.name;
    }
    seg.name = seg.ops.size() == 1 ? seg.ops[0]->name : engine::Engine::InternName(name + ")");
    segs.push_back(std::move(seg));
  }
  return segs;
}

void GraphExecutor::set_bulk_size(int n) {
  TS_CHECK(n >= 1) << "executor: bulk size must be at least 1 (1: no bulking), got " << n;
  bulk_size_ = n;
  forward_segments_ = MakeSegments(forward_nodes_);
  backward_segments_ = MakeSegments(backward_nodes_);
}

void GraphExecutor::Forward(bool is_train) {
  if (monitor_) {
    PushMonitored(forward_nodes_, is_train);
  } else {
    for (const Segment& seg : forward_segments_) Push(seg, is_train);
  }
  trained_forward_ = is_train;
}

void GraphExecutor::Backward(const std::vector<NDArray>& head_grads) {
  if (grad_args_.empty()) return;  // no argument wants a gradient: nothing to do
  // Backward overwrites forward values it has finished with (shared
  // storage), so a second backward would read clobbered values.
  TS_CHECK(trained_forward_) << "backward: run forward with is_train = true first (each backward "
                                "needs a forward of its own)";
  const std::vector<std::string> names = sym_.ListOutputs();
  if (!head_grads.empty()) {
    // Every check before the first copy: a bad call changes nothing.
    TS_CHECK(head_grads.size() == outputs_.size())
        << "backward: " << head_grads.size() << " head gradients for " << outputs_.size()
        << " outputs";
    for (size_t i = 0; i < head_grads.size(); ++i) {
      if (head_grad_arrays_[i].is_none()) continue;  // this output needs no gradient
      const NDArray& h = head_grads[i];
      TS_CHECK(!h.is_none()) << "backward: the head gradient of output '" << names[i]
                             << "' is empty (none)";
      TS_CHECK(h.shape() == outputs_[i].shape() && h.dtype() == outputs_[i].dtype())
          << "backward: the head gradient of output '" << names[i] << "' has shape " << h.shape()
          << " " << DTypeName(h.dtype()) << ", the output " << outputs_[i].shape() << " "
          << DTypeName(outputs_[i].dtype());
    }
    for (size_t i = 0; i < head_grads.size(); ++i)
      if (!head_grad_arrays_[i].is_none()) CopyFromTo(head_grads[i], head_grad_arrays_[i]);
  } else {
    // No head gradients: d(sum of the outputs), ones.
    static const auto ones = MakeAttrs("ones_like");
    for (size_t i = 0; i < outputs_.size(); ++i) {
      if (head_grad_arrays_[i].is_none()) continue;
      std::vector<NDArray> out{head_grad_arrays_[i]};
      Invoke(ones, {outputs_[i]}, &out);
    }
  }
  if (monitor_) {
    PushMonitored(backward_nodes_, true);
  } else {
    for (const Segment& seg : backward_segments_) Push(seg, true);
  }
  trained_forward_ = false;
}

}  // namespace tessera::graph
