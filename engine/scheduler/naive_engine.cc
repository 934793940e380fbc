#include "engine/scheduler/naive_engine.h"

#include <algorithm>
#include <thread>

#include "engine/base/cores.h"
#include "engine/base/error.h"
#include "engine/scheduler/gpu_streams.h"
#include "engine/scheduler/hold.h"
#include "engine/scheduler/opr.h"
#include "engine/scheduler/parker.h"

namespace tessera::engine {

namespace {

// Ops run on the pushing thread, which must be on the op's device (a stream
// takes launches from its own device only); it gets its own device back after.
class DeviceScope {
 public:
  DeviceScope(Context ctx, int max_gpus) {
    if (!ctx.is_gpu()) return;
    ops_ = &GpuStreamsFor(ctx, max_gpus);
    prev_ = ops_->set_device(ctx.dev_id);
  }
  ~DeviceScope() {
    if (!ops_) return;
    try {
      ops_->set_device(prev_);
    } catch (...) {
      // Nothing to restore to: the op ran, and its outcome is what matters.
    }
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  const GpuStreamOps* ops_ = nullptr;
  int prev_ = 0;
};

}  // namespace

NaiveEngine::~NaiveEngine() {
  try {
    WaitForAll();
  } catch (...) {
    // An error nobody waited for dies with the engine.
  }
  for (void* s : streams_)
    if (s) stream_ops_->destroy(s);
}

void* NaiveEngine::StreamFor(Context ctx) {
  TS_DCHECK(ctx.is_gpu());
  std::lock_guard<std::mutex> lock(stream_mu_);
  void*& s = streams_[ctx.dev_id];
  if (!s) {
    stream_ops_ = GpuStreams();
    s = stream_ops_->create(ctx.dev_id);
  }
  return s;
}

void NaiveEngine::Submit(Opr* opr, Context ctx, int priority) {
  // A push inside a running op that must queue behind it would wait for ever
  // here, where every push runs before it returns.
  if (Holding())
    if (uint64_t ahead = HoldAhead(opr->vars.reads(), opr->vars.writes()))
      TS_THROW << "engine op '" << opr->name << "' pushed inside engine op '" << HoldName(ahead)
               << "' needs variables that op holds; the naive engine runs every push at once, "
                  "so it would wait for the op itself";
  if (RunPushedNow(opr, ctx)) return;
  DeviceScope device(ctx, static_cast<int>(streams_.size()));  // these three throw
  void* stream = ctx.is_gpu() ? StreamFor(ctx) : nullptr;      // before any state changes
  EnterInflight(opr, ctx);
  NaiveWait wait;
  wait.pusher = Parker::Current();
  OprBlock* blk = NewBlock(opr, ctx, priority);
  blk->naive = &wait;
  // Another thread's op may hold a variable: wait for it like a queued op would.
  if (AppendToVars(blk)) wait.ready.store(true, std::memory_order_relaxed);
  BlockUntil(wait.ready);
  Execute(blk, RunContext{ctx, stream}, "naive");
  BlockUntil(wait.done);  // an async op may finish on another thread
}

void NaiveEngine::OnReady(OprBlock* blk, const VarEntry* /*newest*/) {
  NaiveWait* wait = blk->naive;
  Parker* pusher = wait->pusher;
  wait->ready.store(true, std::memory_order_release);
  pusher->Unpark();
}

NaiveEngine::NaiveEngine(const EngineOptions& opts) {
  // One thread runs every op: each may use every core.
  const int cores = UsableCores();
  SetOpThreads(opts.op_threads > 0 ? opts.op_threads : cores);
}

EngineStats NaiveEngine::Stats() const {
  EngineStats s;
  s.type = "naive";
  s.pending = Pending();
  return s;
}

}  // namespace tessera::engine
