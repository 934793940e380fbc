// The threads serving one lane of one device (cpu(0) compute, gpu(1) copy,
// ...): a FIFO of ready ops with a high-priority front, and workers that park
// when it is empty. A worker that blocks inside an op (WaitForVar) is
// replaced by a spare thread while it waits, so waits never starve the lane
// of workers, whatever the ops do.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/base/context.h"
#include "engine/scheduler/ready_ring.h"

namespace tessera::engine {

struct OprBlock;
struct VarEntry;
class Parker;

// Per-thread device setup for a lane: a CUDA stream for GPU workers.
struct StreamHooks {
  std::function<void*()> create;       // on the worker thread at start
  std::function<void(void*)> destroy;  // on the worker thread at exit
};

class WorkerPool;
namespace worker_detail {
// The calling thread's pool (null off the workers) and whether it may keep a
// ready op now (worker_pool.cc). Here so that the scopes every op enters and
// leaves are inline.
extern constinit thread_local WorkerPool* tls_pool;
extern constinit thread_local bool tls_handoff_allowed;
}  // namespace worker_detail

class WorkerPool {
 public:
  // `run(blk, rctx)` executes one ready op on a worker thread.
  using RunFn = std::function<void(OprBlock*, const RunContext&)>;
  WorkerPool(Context ctx, std::string lane, int num_workers, RunFn run, StreamHooks hooks = {});
  ~WorkerPool();  // stops and joins every worker; the queue must be empty
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void Push(OprBlock* blk, bool high_priority);
  // Keeps `blk` for the calling worker to run next, skipping the queue, when
  // that is safe: the caller is a worker of `pool` inside a HandOffScope and
  // its slot is free. A chain of dependent ops then stays on one thread.
  // `newest`: `blk`'s entry on a variable with nothing queued behind it yet,
  // or null (see WorkerLoop).
  static bool TryHandOff(WorkerPool* pool, OprBlock* blk, const VarEntry* newest);
  // Allows (or forbids) hand-off on this thread for its lifetime. Allowed only
  // while completing an op whose user code has returned: an op still running
  // could wait for the op kept in the slot, which would never run.
  class HandOffScope {
   public:
    explicit HandOffScope(bool allow) : saved_(worker_detail::tls_handoff_allowed) {
      worker_detail::tls_handoff_allowed = allow;
    }
    ~HandOffScope() { worker_detail::tls_handoff_allowed = saved_; }
    HandOffScope(const HandOffScope&) = delete;
    HandOffScope& operator=(const HandOffScope&) = delete;

   private:
    bool saved_;
  };
  // Queues the op kept for the calling worker, if any: a worker about to
  // block must not sit on the op its wait may need.
  static void FlushHandOff();
  // Takes `blk` out of the queue if it is still waiting there (compared by
  // address only), so another thread may run it.
  bool TryRemove(OprBlock* blk);
  // Takes the next queued op, as a worker would, for another thread to run;
  // null when none is queued.
  OprBlock* TryTake() { return TryPop(); }

  // The pool the calling thread works for, or null on other threads.
  static WorkerPool* Current() { return worker_detail::tls_pool; }
  // Bracket a blocking wait of a worker of this pool: a spare takes its place.
  void BeginBlocking();
  void EndBlocking();

  const Context& ctx() const { return ctx_; }
  const std::string& lane() const { return lane_; }
  int workers() const { return target_; }
  int64_t queued() const {
    return ring_.Size() + num_high_.load(std::memory_order_relaxed) +
           num_overflow_.load(std::memory_order_relaxed);
  }
  int64_t running() const { return running_.load(std::memory_order_relaxed); }

 private:
  void WorkerLoop(int index);
  OprBlock* TryPop();
  bool HasWork() const;
  void SpawnLocked();
  void UpdateExcessLocked();
  void WakeOneSleeper();

  const Context ctx_;
  const std::string lane_;
  const int target_;  // workers meant to run ops at once
  RunFn run_;
  StreamHooks hooks_;

  // Normal ops go through the lock-free ring; priority ops, and ops that
  // find the ring full, through deques under mu_, counted so that workers
  // look there only when they hold something.
  ReadyRing ring_;
  alignas(64) std::atomic<int64_t> num_high_{0};
  std::atomic<int64_t> num_overflow_{0};
  // Every Push from outside the pool reads it with a read-modify-write, so
  // it has a line of its own: beside excess_ and stop_, which each worker
  // loop reads, it would pull that line away from the polling workers.
  alignas(64) std::atomic<int> num_sleepers_{0};
  // Workers beyond the target that should step aside (a blocked worker came
  // back); recomputed under mu_, read without it by every worker loop.
  alignas(64) std::atomic<int> excess_{0};
  std::atomic<bool> stop_{false};
  alignas(64) std::atomic<int64_t> running_{0};

  alignas(64) std::mutex mu_;
  std::deque<OprBlock*> high_, overflow_;
  std::vector<Parker*> sleepers_;  // idle workers, woken by Push
  std::vector<Parker*> spares_;    // surplus workers, woken by BeginBlocking
  std::vector<std::thread> threads_;
  int blocked_ = 0;  // workers inside BeginBlocking/EndBlocking
};

}  // namespace tessera::engine
