#include "engine/scheduler/worker_pool.h"

#include <pthread.h>

#include <algorithm>

#include "engine/base/error.h"
#include "engine/base/logging.h"
#include "engine/scheduler/opr.h"
#include "engine/scheduler/parker.h"
#include "engine/scheduler/profiler.h"

namespace tessera::engine {

constinit thread_local WorkerPool* worker_detail::tls_pool = nullptr;
constinit thread_local bool worker_detail::tls_handoff_allowed = false;

namespace {

using worker_detail::tls_handoff_allowed;
using worker_detail::tls_pool;
// An op made ready by the op this worker just completed, to run next: a chain
// of dependent ops then stays on one thread without touching the queue.
thread_local OprBlock* tls_next = nullptr;
thread_local const VarEntry* tls_next_newest = nullptr;

// More threads than this per lane means ops are blocking on each other in a
// way no number of threads resolves.
constexpr int kMaxThreadsPerLane = 256;
// How long an idle worker polls before parking: in a stream of small ops the
// next one usually arrives within microseconds, and a futex wake costs more.
constexpr int kIdleSpins = 2000;
constexpr int kPollEvery = 8;
// How long a worker that has caught up with a pusher lets it get ahead (see
// LetPusherAhead): about half a microsecond on current x86 cores.
constexpr int kCatchUpPauses = 24;

void Erase(std::vector<Parker*>& list, Parker* p) {
  auto it = std::find(list.begin(), list.end(), p);
  if (it != list.end()) list.erase(it);
}

inline void CpuRelax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}

// The op handed to this worker is the newest write on its variable (`entry`
// is its place there): the worker has caught up with a thread pushing a
// chain. Running it at once would have the two cores pass the lines of each
// new op back and forth as one writes them and the other reads them, which
// slows both (measured in docs/engine.md, "keeping distance"). A moment's
// pause lets the pusher get several ops ahead, which then run back to back
// on lines it has finished with. A wait queued behind the op (WaitForVar, a
// deletion) ends the pause: then a thread waits for this op rather than
// pushing more.
void LetPusherAhead(const VarEntry* entry) {
  for (int i = 0; i < kCatchUpPauses; ++i) {
    // The entry and whatever queues behind it stay until this op completes.
    if (i % 4 == 0) {
      const VarEntry* behind = entry->next.load(std::memory_order_acquire);
      if (behind && behind->blk->opr->always_run) return;
    }
    CpuRelax();
  }
}

}  // namespace

WorkerPool::WorkerPool(Context ctx, std::string lane, int num_workers, RunFn run, StreamHooks hooks)
    : ctx_(ctx),
      lane_(std::move(lane)),
      target_(std::max(1, num_workers)),
      run_(std::move(run)),
      hooks_(std::move(hooks)) {
  std::lock_guard<std::mutex> lock(mu_);
  for (int i = 0; i < target_; ++i) SpawnLocked();
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
    for (Parker* p : sleepers_) p->Unpark();
    for (Parker* p : spares_) p->Unpark();
  }
  for (std::thread& t : threads_) t.join();
}

bool WorkerPool::TryHandOff(WorkerPool* pool, OprBlock* blk, const VarEntry* newest) {
  if (!tls_handoff_allowed || pool != tls_pool || tls_next) return false;
  tls_next = blk;
  tls_next_newest = newest;
  return true;
}

void WorkerPool::FlushHandOff() {
  if (!tls_next) return;
  OprBlock* blk = tls_next;
  tls_next = nullptr;
  tls_pool->Push(blk, blk->priority > 0);
}

void WorkerPool::SpawnLocked() {
  int index = static_cast<int>(threads_.size());
  threads_.emplace_back([this, index] { WorkerLoop(index); });
  UpdateExcessLocked();
}

void WorkerPool::UpdateExcessLocked() {
  int active = static_cast<int>(threads_.size() - spares_.size()) - blocked_;
  excess_.store(std::max(0, active - target_), std::memory_order_relaxed);
}

void WorkerPool::Push(OprBlock* blk, bool high_priority) {
  if (high_priority || !ring_.Push(blk)) {
    std::lock_guard<std::mutex> lock(mu_);
    if (high_priority) {
      high_.push_back(blk);
      num_high_.fetch_add(1, std::memory_order_relaxed);
    } else {
      overflow_.push_back(blk);
      num_overflow_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  // A read-modify-write, paired with the one in WorkerLoop: the two are
  // ordered on num_sleepers_, so either this sees the worker going to sleep,
  // or the worker's recheck, coming after, sees this op.
  if (num_sleepers_.fetch_add(0, std::memory_order_acq_rel) > 0) WakeOneSleeper();
}

void WorkerPool::WakeOneSleeper() {
  Parker* wake = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (sleepers_.empty()) return;
    wake = sleepers_.back();
    sleepers_.pop_back();
    num_sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }
  wake->Unpark();
}

bool WorkerPool::HasWork() const {
  return num_high_.load(std::memory_order_relaxed) > 0 || !ring_.Empty() ||
         num_overflow_.load(std::memory_order_relaxed) > 0;
}

OprBlock* WorkerPool::TryPop() {
  if (num_high_.load(std::memory_order_relaxed) > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!high_.empty()) {
      OprBlock* blk = high_.front();
      high_.pop_front();
      num_high_.fetch_sub(1, std::memory_order_relaxed);
      return blk;
    }
  }
  if (OprBlock* blk = ring_.Pop()) return blk;
  if (num_overflow_.load(std::memory_order_relaxed) > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!overflow_.empty()) {
      OprBlock* blk = overflow_.front();
      overflow_.pop_front();
      num_overflow_.fetch_sub(1, std::memory_order_relaxed);
      return blk;
    }
  }
  return nullptr;
}

bool WorkerPool::TryRemove(OprBlock* blk) {
  if (ring_.Steal(blk)) return true;
  if (num_high_.load(std::memory_order_relaxed) == 0) return false;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find(high_.begin(), high_.end(), blk);
  if (it == high_.end()) return false;
  high_.erase(it);
  num_high_.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

void WorkerPool::BeginBlocking() {
  std::lock_guard<std::mutex> lock(mu_);
  ++blocked_;
  int active = static_cast<int>(threads_.size() - spares_.size()) - blocked_;
  if (active < target_) {
    if (!spares_.empty()) {
      Parker* p = spares_.back();
      spares_.pop_back();
      p->Unpark();
    } else {
      TS_CHECK(threads_.size() < size_t(kMaxThreadsPerLane))
          << ctx_.ToString() << " " << lane_ << " lane: " << blocked_
          << " ops are blocked waiting inside other ops; refusing to start more threads";
      SpawnLocked();
    }
  }
  UpdateExcessLocked();
}

void WorkerPool::EndBlocking() {
  std::lock_guard<std::mutex> lock(mu_);
  --blocked_;  // a surplus worker turns spare when it next looks for work
  UpdateExcessLocked();
}

void WorkerPool::WorkerLoop(int index) {
  tls_pool = this;
  Parker* me = Parker::Current();
  Profiler::SetThreadName(ctx_.ToString() + " " + lane_ + " " + std::to_string(index));
  std::string short_name = "ts-" + lane_.substr(0, 4) + std::to_string(index);
  pthread_setname_np(pthread_self(), short_name.substr(0, 15).c_str());
  RunContext rctx{ctx_, nullptr};
  if (hooks_.create) {
    try {
      rctx.stream = hooks_.create();
    } catch (const std::exception& e) {
      // The lane's first stream was made at its first push, so the device
      // worked then; this worker's ops now fail for want of a stream.
      TS_LOG(Error) << ctx_.ToString() << " " << lane_ << " worker " << index
                    << ": cannot make a CUDA stream: " << e.what();
    }
  }

  // Parked, then woken, and nothing run since. A push wakes a sleeper, but
  // the pushing thread often runs the op itself when it waits for it
  // (HelpWith, HelpWithAll); a worker that then finds nothing parks again at
  // once: polling would take the other core from that op's OpenMP team.
  // Spinning stays for a worker that just ran ops, where the next one
  // usually arrives within microseconds.
  bool woken = false;
  while (!stop_.load(std::memory_order_relaxed)) {
    if (excess_.load(std::memory_order_relaxed) > 0) {  // a blocked worker came back
      std::unique_lock<std::mutex> lock(mu_);
      int active = static_cast<int>(threads_.size() - spares_.size()) - blocked_;
      if (active > target_ && !stop_.load()) {
        spares_.push_back(me);
        UpdateExcessLocked();
        uint32_t e = me->Epoch();
        lock.unlock();
        me->Park(e);
        lock.lock();
        Erase(spares_, me);
        UpdateExcessLocked();
      }
      continue;
    }
    if (OprBlock* blk = TryPop()) {
      woken = false;
      running_.fetch_add(1, std::memory_order_relaxed);
      while (blk) {
        run_(blk, rctx);
        blk = tls_next;
        tls_next = nullptr;
        if (blk && tls_next_newest) LetPusherAhead(tls_next_newest);
      }
      running_.fetch_sub(1, std::memory_order_relaxed);
      continue;
    }
    // Poll every few pauses rather than every one: a thread that pushes an op
    // and waits for it then usually runs it itself (HelpWith) instead of
    // handing it across cores, and ops of a chain pushed meanwhile queue up
    // on their variable and run back to back here.
    bool found = false;
    const int spins = woken ? 0 : kIdleSpins;
    for (int i = 0; i < spins && !(found = HasWork()); i += kPollEvery)
      for (int k = 0; k < kPollEvery; ++k) CpuRelax();
    if (found) continue;
    std::unique_lock<std::mutex> lock(mu_);
    sleepers_.push_back(me);
    num_sleepers_.fetch_add(1, std::memory_order_acq_rel);  // pairs with Push
    uint32_t e = me->Epoch();
    lock.unlock();
    if (!HasWork() && !stop_.load()) {
      me->Park(e);
      woken = true;
    }
    lock.lock();
    auto it = std::find(sleepers_.begin(), sleepers_.end(), me);
    if (it != sleepers_.end()) {  // not taken by a pusher: leave the list ourselves
      sleepers_.erase(it);
      num_sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  if (hooks_.destroy) hooks_.destroy(rctx.stream);
  tls_pool = nullptr;
}

}  // namespace tessera::engine
