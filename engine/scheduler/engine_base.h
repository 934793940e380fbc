// What the threaded and naive engines share: op records, variable
// normalisation, running an op (poison check, profiling, errors), completing
// it (grants, versions, poison), waiting and the error list. The two engines
// differ only in how a ready op gets to run (Submit and OnReady).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <vector>

#include "engine/base/error.h"
#include "engine/scheduler/engine.h"
#include "engine/scheduler/error_record.h"
#include "engine/scheduler/opr.h"

namespace tessera::engine {

class Parker;

class EngineBase : public Engine {
 public:
  VarHandle NewVariable() override;
  void DeleteVariable(SyncFn delete_fn, Context ctx, VarHandle var) override;
  void PushSync(SyncFn fn, Context ctx, VarList const_vars, VarList mutate_vars, FnProperty prop,
                int priority, const char* name, size_t bytes) override;
  void PushAsync(AsyncFn fn, Context ctx, VarList const_vars, VarList mutate_vars, FnProperty prop,
                 int priority, const char* name, size_t bytes) override;
  OprHandle NewOperator(AsyncFn fn, VarList const_vars, VarList mutate_vars, FnProperty prop,
                        const char* name) override;
  void Push(OprHandle op, Context ctx, int priority) override;
  void DeleteOperator(OprHandle op) override;
  void WaitForVar(VarHandle var, WaitMode mode) override;
  void WaitForAll() override;
  bool WaitForAllIfIdle() override;
  void NotifyWhenSettled(VarList vars, std::function<void(std::exception_ptr)> fn,
                         WaitMode mode) override;
  void SetMaxInflight(const InflightBound& bound) override {
    max_inflight_.store(bound.ops);
    max_inflight_bytes_[kHost].store(bound.host_bytes);
    max_inflight_bytes_[kGpu].store(bound.gpu_bytes);
  }
  InflightBound MaxInflight() const override {
    return {max_inflight_.load(), max_inflight_bytes_[kHost].load(),
            max_inflight_bytes_[kGpu].load()};
  }
  int OpThreads() const final { return op_threads_; }

 protected:
  bool TryRunNowImpl(void (*call)(void*), void* fn, VarList const_vars, VarList mutate_vars,
                     const char* name) override;
  // Starts one run of `opr`, whose reference the caller has taken. Must check
  // the context before changing any state, so a bad push throws cleanly.
  virtual void Submit(Opr* opr, Context ctx, int priority) = 0;
  // `blk` was granted every variable it needs; `newest` as for
  // Var::CompleteWrite's grant.
  virtual void OnReady(OprBlock* blk, const VarEntry* newest) = 0;
  // A user thread is about to wait for `var`: run its pending write here if
  // that op is ready and no worker has taken it yet.
  virtual void HelpWith(VarHandle) {}
  // A user thread is about to wait for every op: run ready ops here while
  // the workers that would take them are not running.
  virtual void HelpWithAll() {}

  // Queues `blk` on each of its variables; true when all were granted at once.
  bool AppendToVars(OprBlock* blk);
  void Grant(OprBlock* blk, const VarEntry* newest) {
    const int before = blk->wait.fetch_sub(1, std::memory_order_acq_rel);
    TS_DCHECK(before >= 1);  // granted no more often than it has variables
    if (before == 1) OnReady(blk, newest);
  }
  // Runs the op (or skips it when an input is poisoned) and, for sync ops,
  // completes it. `lane` labels the profiler event.
  void Execute(OprBlock* blk, const RunContext& rctx, const char* lane);
  // Ends a GPU op's run on its stream: records an event behind its work when
  // it completes on one, else waits for the stream (sets *err on failure).
  void EndOnStream(const Opr* op, const RunContext& run, bool profiling, ErrorRef* err);
  bool CompletesOnEvent(const Opr* op, bool profiling) const;
  // Set once by the threaded engine's constructor (gpu_completion.h); the
  // naive engine waits for the stream after every op.
  void SetGpuEventCompletion(bool on) { gpu_event_completion_ = on; }
  // `free_block` false: the caller frees `blk` (an async function that ended
  // itself is still running from it).
  void Complete(OprBlock* blk, ErrorRef err, bool new_error, bool free_block = true);

  OprBlock* NewBlock(Opr* opr, Context ctx, int priority);
  // Runs `op`, just pushed, to its end on the calling thread when nothing
  // asks for it to be queued: a sync CPU op whose variables are all free and
  // clean, outside the profiler and push groups.
  // Then takes the op (freeing a temporary one) and returns true; else
  // returns false having changed nothing. The naive engine's usual push: no
  // block, no queue entries, no pending count, no wake-up.
  bool RunPushedNow(Opr* op, Context ctx);
  // Set once by the engine's constructor; carried to kernels in RunContext.
  void SetOpThreads(int n) {
#ifdef _OPENMP
    op_threads_ = std::max(1, n);
#else
    op_threads_ = 1;  // kernels' loops run serially: tell them so
    (void)n;
#endif
  }
  // Blocks the calling thread until `done`, lending its lane a spare worker
  // meanwhile when it is an engine worker.
  static void BlockUntil(const std::atomic<bool>& done);
  // The byte bounds count an op's new memory against its context's kind.
  enum MemKind { kHost = 0, kGpu = 1 };
  static MemKind KindOf(Context ctx) {
    return ctx.is_gpu() ? kGpu : kHost;
  }
  // Before `op` is queued: waits, where the run-ahead bound says so, for
  // room for it, then counts its bytes in flight. Inline up to the wait:
  // every push asks, and nearly every answer is "room".
  void EnterInflight(const Opr* op, Context ctx) {
    const size_t bytes = size_t{op->inflight_kib} << 10;
    const MemKind kind = KindOf(ctx);
    if (!InflightRoom(bytes, kind)) [[unlikely]]
      WaitForRoom(bytes, kind);
    if (bytes) inflight_bytes_[kind].fetch_add(int64_t(bytes), std::memory_order_relaxed);
  }
  void WaitForRoom(size_t bytes, MemKind kind);

  // Ops pushed and not yet complete. Pushers and finishers count on separate
  // cache lines: one shared counter would bounce between cores on every op.
  // Completions are read first: read the other way round, ops pushed and
  // finished between the two loads could hide an older op still running.
  int64_t Pending() const {
    int64_t done = completed_.load();
    return pushed_.load() - done;
  }
  alignas(64) std::atomic<int64_t> pushed_{0};
  // A value completed_ once had, on the pushers' line: pushed_ minus it is
  // at least the ops in flight, so a push below the op bound by that measure
  // does not read completed_, whose line the finishing threads write.
  mutable std::atomic<int64_t> completed_floor_{0};
  alignas(64) std::atomic<int64_t> completed_{0};
  alignas(64) std::atomic<int64_t> max_inflight_{0};
  std::atomic<int64_t> max_inflight_bytes_[2] = {0, 0};          // by MemKind
  alignas(64) std::atomic<int64_t> inflight_bytes_[2] = {0, 0};  // new memory of ops in flight

 private:
  class OprOwner;
  // Hands a new op to Submit; the owner keeps it (and frees it) if that throws.
  void SubmitNew(OprOwner& op, Context ctx, int priority);
  // Blocks the calling thread among the waiters OpFinished wakes, until `done`.
  // `for_room`: a run-ahead waiter (waiting for InflightRoom).
  void ParkWaiter(const std::function<bool()>& done, bool for_room);
  // WaitForAll's end, once nothing is pending: waits for the GPU work the
  // ops queued, then rethrows the first error no wait has reported.
  void SettleDevicesAndReport();
  Opr* NewTempOpr(VarList const_vars, VarList mutate_vars, FnProperty prop, const char* name,
                  bool persistent = false);
  static void FreeOpr(Opr* op);
  static void OnAsyncDone(void* engine, void* block, std::exception_ptr error);
  void OpFinished(size_t bytes, MemKind kind);
  // Room for an op with `bytes` of new memory: below the op bound, and, when
  // the op adds counted memory, nothing in flight (an op larger than the
  // bound must still run) or room under the byte bound. Inline: it runs on
  // every push.
  bool InflightRoom(size_t bytes, MemKind kind) const {
    const int64_t max_ops = max_inflight_.load(std::memory_order_relaxed);
    if (max_ops > 0 && !OpsRoom(max_ops)) return false;
    if (bytes == 0) return true;
    const int64_t max_bytes = max_inflight_bytes_[kind].load(std::memory_order_relaxed);
    if (max_bytes <= 0) return true;
    return Pending() <= 0 ||
           inflight_bytes_[kind].load(std::memory_order_relaxed) + int64_t(bytes) <= max_bytes;
  }
  // Fewer than `max_ops` ops in flight. The floor makes the usual answer a
  // read of the pushers' own line; completed_ is read only near the bound.
  bool OpsRoom(int64_t max_ops) const {
    const int64_t pushed = pushed_.load();
    if (pushed - completed_floor_.load(std::memory_order_relaxed) < max_ops) return true;
    const int64_t done = completed_.load();
    completed_floor_.store(done, std::memory_order_relaxed);
    return pushed_.load() - done < max_ops;
  }
  void RecordError(const ErrorRef& err);
  void WakeWaiters();
  // The variables of a run on the calling thread (TryRunNow, RunPushedNow),
  // in normal form: true, holding each, when all were free and none of the
  // reads or `updated` writes (bits as OprVars) is poisoned; else holds
  // none. `entries` has room for the writes.
  bool HoldNow(std::span<const VarHandle> reads, std::span<const VarHandle> writes,
               uint32_t updated, VarEntry* entries);
  // Ends what HoldNow took; `wrote`: the writes count as versions.
  void ReleaseNow(std::span<const VarHandle> reads, std::span<const VarHandle> writes, bool wrote);
  // The most variables a run on the calling thread takes (its entries and
  // normal form live on the stack).
  static constexpr size_t kMaxReadsNow = 8, kMaxWritesNow = 4;

  int op_threads_ = 1;
  bool gpu_event_completion_ = false;
  // GPUs whose streams hold work queued by ops that completed on events
  // (bit i: gpu(i)): WaitForAll waits for them.
  std::atomic<uint64_t> gpu_devices_queued_{0};
  std::mutex wait_mu_;
  // WaitForAll and run-ahead waiters: a parked thread, or one that serves
  // while it waits (Engine::ThreadBlocking).
  struct Waiter {
    Parker* parker;
    const ThreadBlocking* blocking;
    bool operator==(const Waiter&) const = default;
  };
  std::vector<Waiter> waiters_;
  std::atomic<int> num_waiters_{0};
  std::atomic<int> num_room_waiters_{0};  // of num_waiters_, those waiting for room
  std::mutex error_mu_;
  std::vector<ErrorRef> errors_;  // failures not yet reported by WaitForAll
};

}  // namespace tessera::engine
