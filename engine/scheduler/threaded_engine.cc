#include "engine/scheduler/threaded_engine.h"

#include <algorithm>
#include <thread>

#include "engine/base/cores.h"
#include "engine/base/error.h"
#include "engine/scheduler/gpu_streams.h"
#include "engine/scheduler/opr.h"
#include "engine/scheduler/var.h"

namespace tessera::engine {
namespace {

// Inline ops that make further inline ops ready recurse; past this depth
// they go through the CPU pool instead, so long chains cannot overflow the stack.
constexpr int kMaxInlineDepth = 16;
thread_local int tls_inline_depth = 0;

const char* const kLaneNames[] = {"compute", "priority", "copy"};

}  // namespace

ThreadedEngine::ThreadedEngine(const EngineOptions& opts) : opts_(opts) {
  SetMaxInflight(opts.inflight);
  SetGpuEventCompletion(!opts.gpu_sync_each_op);
  const int cores = UsableCores();
  SetOpThreads(opts.op_threads > 0 ? opts.op_threads
                                   : std::max(1, cores / std::max(1, opts.cpu_workers)));
}

ThreadedEngine::~ThreadedEngine() {
  try {
    WaitForAll();
  } catch (...) {
    // An error nobody waited for dies with the engine.
  }
  for (auto& p : pools_) p.store(nullptr);
  for (auto& p : owned_) p.reset();  // joins the workers
}

WorkerPool* ThreadedEngine::MakePool(int slot, Context ctx, Lane lane) {
  std::lock_guard<std::mutex> lock(make_mu_);
  if (WorkerPool* p = pools_[slot].load(std::memory_order_acquire)) return p;
  int workers = 1;
  StreamHooks hooks;
  if (ctx.is_gpu()) {
    workers = lane == kCompute ? opts_.gpu_workers : lane == kCopy ? opts_.gpu_copy_workers : 1;
    const GpuStreamOps* ops = GpuStreams();
    int dev = ctx.dev_id;
    // A worker thread could not report a failure to make its stream (the
    // device in exclusive use by another process, out of memory): make one
    // here first, so that the push starting the lane fails with CUDA's reason.
    const int prev = ops->set_device(dev);
    try {
      ops->destroy(ops->create(dev));
    } catch (...) {
      ops->set_device(prev);
      throw;
    }
    ops->set_device(prev);
    hooks.create = [ops, dev] { return ops->create(dev); };
    hooks.destroy = [ops](void* s) { ops->destroy(s); };
  } else {
    workers = lane == kCompute    ? opts_.cpu_workers
              : lane == kPriority ? opts_.cpu_priority_workers
                                  : opts_.cpu_copy_workers;
  }
  auto run = [this, name = kLaneNames[lane]](OprBlock* blk, const RunContext& rctx) {
    Execute(blk, rctx, name);
  };
  owned_[slot] = std::make_unique<WorkerPool>(ctx, kLaneNames[lane], workers, run, hooks);
  pools_[slot].store(owned_[slot].get(), std::memory_order_release);
  return owned_[slot].get();
}

WorkerPool* ThreadedEngine::PoolFor(Context ctx, FnProperty prop, bool has_work) {
  Lane lane = kCompute;
  switch (prop) {
    case FnProperty::kAsync:
      return nullptr;
    case FnProperty::kDeleteVar:
      // Giving host memory back to the pool takes less than waking a worker;
      // a device or pinned free may wait for the device, so it keeps to a lane.
      if (!has_work || ctx.dev_type == DeviceType::kCPU) return nullptr;
      break;
    case FnProperty::kCopyFromGPU:
    case FnProperty::kCopyToGPU:
    case FnProperty::kCopyCPU:
      lane = kCopy;
      break;
    case FnProperty::kCPUPrioritized:
      lane = kPriority;
      ctx = Context::CPU();
      break;
    case FnProperty::kGPUPrioritized:
      lane = kPriority;
      break;
    case FnProperty::kNormal:
      break;
  }
  int slot = lane;
  if (ctx.is_gpu()) {
    GpuStreamsFor(ctx, kMaxGPUs);  // throws for a GPU this build or machine lacks
    slot = kNumLanes * (1 + ctx.dev_id) + lane;
  } else {
    ctx = Context::CPU();
  }
  WorkerPool* p = pools_[slot].load(std::memory_order_acquire);
  return p ? p : MakePool(slot, ctx, lane);
}

void ThreadedEngine::Submit(Opr* opr, Context ctx, int priority) {
  WorkerPool* pool = PoolFor(ctx, opr->prop, opr->has_fn());  // throws before any state changes
  EnterInflight(opr, ctx);
  OprBlock* blk = NewBlock(opr, ctx, priority);
  blk->pool = pool;
  if (AppendToVars(blk)) OnReady(blk, nullptr);
}

void ThreadedEngine::OnReady(OprBlock* blk, const VarEntry* newest) {
  if (blk->pool) {
    if (!WorkerPool::TryHandOff(blk->pool, blk, newest)) blk->pool->Push(blk, blk->priority > 0);
  } else if (tls_inline_depth < kMaxInlineDepth) {
    RunInline(blk);
  } else {
    PoolFor(Context::CPU(), FnProperty::kNormal, true)->Push(blk, true);
  }
}

void ThreadedEngine::HelpWith(VarHandle var) {
  // Only the CPU compute lane: its ops may run on any CPU thread. The writer
  // is compared by address and dereferenced only once removed from the queue.
  WorkerPool* cpu = pools_[kCompute].load(std::memory_order_acquire);
  if (!cpu || cpu->queued() == 0) return;
  OprBlock* writer = var->GrantedWriter();
  if (writer && cpu->TryRemove(writer))
    Execute(writer, RunContext{Context::CPU(), nullptr}, "compute");
}

void ThreadedEngine::HelpWithAll() {
  // What WaitForVar's help does for one op, for a wait on all of them: a
  // pushed op that no worker is running yet runs here, on a thread that
  // would only sleep, instead of crossing to a worker being woken on another
  // core (about 0.1 ms both ways on a virtual machine, more than a small
  // op's work). Only while fewer ops run on the lane than it has workers, so
  // the helper never adds a team of OpenMP threads to busy workers.
  WorkerPool* cpu = pools_[kCompute].load(std::memory_order_acquire);
  if (!cpu) return;
  while (cpu->queued() > 0 && cpu->running() < cpu->workers()) {
    OprBlock* blk = cpu->TryTake();
    if (!blk) return;
    Execute(blk, RunContext{Context::CPU(), nullptr}, "compute");
  }
}

void ThreadedEngine::RunInline(OprBlock* blk) {
  ++tls_inline_depth;
  Execute(blk, RunContext{blk->ctx, nullptr}, "inline");
  --tls_inline_depth;
}

EngineStats ThreadedEngine::Stats() const {
  EngineStats s;
  s.type = "threaded";
  s.pending = Pending();
  for (const auto& slot : pools_) {
    WorkerPool* p = slot.load(std::memory_order_acquire);
    if (!p) continue;
    s.lanes.push_back({p->ctx(), p->lane(), p->workers(), p->queued(), p->running()});
  }
  return s;
}

}  // namespace tessera::engine
