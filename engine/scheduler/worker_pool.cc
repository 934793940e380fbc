#include "engine/scheduler/worker_pool.h"

#include <pthread.h>

#include <algorithm>

#include "engine/base/error.h"
#include "engine/scheduler/parker.h"
#include "engine/scheduler/profiler.h"

namespace tessera::engine {
namespace {

thread_local WorkerPool* tls_pool = nullptr;
// An op made ready by the op this worker is running, to run next: a chain of
// dependent ops then stays on one thread without touching the queue.
thread_local OprBlock* tls_next = nullptr;
thread_local bool tls_handoff_allowed = false;

// More threads than this per lane means ops are blocking on each other in a
// way no number of threads resolves.
constexpr int kMaxThreadsPerLane = 256;

void Erase(std::vector<Parker*>& list, Parker* p) {
  auto it = std::find(list.begin(), list.end(), p);
  if (it != list.end()) list.erase(it);
}

inline void CpuRelax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
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
    stop_ = true;
    for (Parker* p : sleepers_) p->Unpark();
    for (Parker* p : spares_) p->Unpark();
  }
  for (std::thread& t : threads_) t.join();
}

WorkerPool* WorkerPool::Current() {
  return tls_pool;
}

WorkerPool::HandOffScope::HandOffScope(bool allow) : saved_(tls_handoff_allowed) {
  tls_handoff_allowed = allow;
}
WorkerPool::HandOffScope::~HandOffScope() {
  tls_handoff_allowed = saved_;
}

bool WorkerPool::TryHandOff(WorkerPool* pool, OprBlock* blk) {
  if (!tls_handoff_allowed || pool != tls_pool || tls_next) return false;
  tls_next = blk;
  return true;
}

void WorkerPool::SpawnLocked() {
  int index = static_cast<int>(threads_.size());
  threads_.emplace_back([this, index] { WorkerLoop(index); });
}

void WorkerPool::Push(OprBlock* blk, bool high_priority) {
  Parker* wake = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    (high_priority ? high_ : normal_).push_back(blk);
    queued_.fetch_add(1, std::memory_order_relaxed);
    if (!sleepers_.empty()) {
      wake = sleepers_.back();
      sleepers_.pop_back();
    }
  }
  if (wake) wake->Unpark();
}

OprBlock* WorkerPool::PopLocked() {
  std::deque<OprBlock*>& q = !high_.empty() ? high_ : normal_;
  if (q.empty()) return nullptr;
  OprBlock* blk = q.front();
  q.pop_front();
  queued_.fetch_sub(1, std::memory_order_relaxed);
  return blk;
}

bool WorkerPool::TryRemove(OprBlock* blk) {
  std::lock_guard<std::mutex> lock(mu_);
  for (std::deque<OprBlock*>* q : {&normal_, &high_}) {
    // A waited-for op was usually pushed just before: look at the newest few.
    int scanned = 0;
    for (auto it = q->rbegin(); it != q->rend() && scanned < 8; ++it, ++scanned) {
      if (*it != blk) continue;
      q->erase(std::next(it).base());
      queued_.fetch_sub(1, std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

void WorkerPool::BeginBlocking() {
  std::lock_guard<std::mutex> lock(mu_);
  ++blocked_;
  int active = static_cast<int>(threads_.size() - spares_.size()) - blocked_;
  if (active >= target_) return;
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

void WorkerPool::EndBlocking() {
  std::lock_guard<std::mutex> lock(mu_);
  --blocked_;  // a surplus worker turns spare when it next looks for work
}

void WorkerPool::WorkerLoop(int index) {
  tls_pool = this;
  Parker* me = Parker::Current();
  std::string label = ctx_.ToString() + " " + lane_ + " " + std::to_string(index);
  Profiler::SetThreadName(label);
  std::string short_name = "ts-" + lane_.substr(0, 4) + std::to_string(index);
  pthread_setname_np(pthread_self(), short_name.substr(0, 15).c_str());
  RunContext rctx{ctx_, hooks_.create ? hooks_.create() : nullptr};

  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (stop_) break;
    int active = static_cast<int>(threads_.size() - spares_.size()) - blocked_;
    if (active > target_) {  // a blocked worker came back: step aside
      spares_.push_back(me);
      uint32_t e = me->Epoch();
      lock.unlock();
      me->Park(e);
      lock.lock();
      Erase(spares_, me);
      continue;
    }
    OprBlock* blk = PopLocked();
    if (!blk) {
      // Spin briefly before sleeping: in a stream of small ops the next one
      // usually arrives within microseconds, and a futex wake costs more.
      lock.unlock();
      for (int i = 0; i < 2000 && queued_.load(std::memory_order_relaxed) == 0; ++i) CpuRelax();
      lock.lock();
      if (stop_) break;
      if (high_.empty() && normal_.empty()) {
        sleepers_.push_back(me);
        uint32_t e = me->Epoch();
        lock.unlock();
        me->Park(e);
        lock.lock();
        Erase(sleepers_, me);
      }
      continue;
    }
    lock.unlock();
    running_.fetch_add(1, std::memory_order_relaxed);
    while (blk) {
      run_(blk, rctx);
      blk = tls_next;
      tls_next = nullptr;
    }
    running_.fetch_sub(1, std::memory_order_relaxed);
    lock.lock();
  }
  lock.unlock();
  if (hooks_.destroy) hooks_.destroy(rctx.stream);
  tls_pool = nullptr;
}

}  // namespace tessera::engine
