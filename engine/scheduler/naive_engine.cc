#include "engine/scheduler/naive_engine.h"

#include <algorithm>
#include <thread>

#include "engine/base/error.h"
#include "engine/scheduler/gpu_streams.h"
#include "engine/scheduler/opr.h"
#include "engine/scheduler/parker.h"

namespace tessera::engine {

void* NaiveEngine::StreamFor(Context ctx) {
  if (!ctx.is_gpu()) return nullptr;
  TS_CHECK(GpuStreams() != nullptr) << ctx.ToString() << ": this build has no CUDA";
  TS_CHECK(ctx.dev_id >= 0 && ctx.dev_id < std::min<int>(NumGPUs(), streams_.size()))
      << ctx.ToString() << " is not available: " << NumGPUs() << " GPUs";
  std::lock_guard<std::mutex> lock(stream_mu_);
  void*& s = streams_[ctx.dev_id];
  if (!s) s = GpuStreams()->create(ctx.dev_id);
  return s;
}

void NaiveEngine::Submit(Opr* opr, Context ctx, int priority) {
  void* stream = StreamFor(ctx);  // throws before any state changes
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

void NaiveEngine::OnReady(OprBlock* blk) {
  NaiveWait* wait = blk->naive;
  Parker* pusher = wait->pusher;
  wait->ready.store(true, std::memory_order_release);
  pusher->Unpark();
}

int NaiveEngine::OpThreads() const {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

EngineStats NaiveEngine::Stats() const {
  EngineStats s;
  s.type = "naive";
  s.pending = Pending();
  return s;
}

}  // namespace tessera::engine
