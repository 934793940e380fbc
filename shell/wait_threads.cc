#include "wait_threads.h"

#include <pthread.h>

#include <condition_variable>
#include <csignal>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera::shell {
namespace {

class Helper {
 public:
  void Give(std::shared_ptr<BlockingWait> w) {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = std::move(w);
    cv_.notify_one();
  }
  void Loop();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<BlockingWait> job_;
};

// Helpers live as long as the process, and so does this list: never
// destroyed, so a helper finishing a wait while the process exits never
// touches a destroyed vector or mutex.
std::mutex& IdleMutex() {
  static auto* mu = new std::mutex;
  return *mu;
}
std::vector<Helper*>& Idle() {
  static auto* idle = new std::vector<Helper*>;
  return *idle;
}

void Helper::Loop() {
  for (;;) {
    std::shared_ptr<BlockingWait> w;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return job_ != nullptr; });
      w = std::move(job_);
    }
    try {
      w->wait();
    } catch (...) {
      w->error = std::current_exception();
    }
    // The waiter keeps its reference until it has seen `done`, so dropping
    // ours first leaves it the last one: the wait and its error are freed on
    // the waiter's thread, after it has read them.
    BlockingWait* raw = w.get();
    std::function<void()> on_done = raw->on_done;
    w.reset();
    raw->done.store(true, std::memory_order_release);  // `raw` may be gone after this
    if (on_done) on_done();
    std::lock_guard<std::mutex> lock(IdleMutex());
    Idle().push_back(this);
  }
}

Helper* NewHelper() {
  auto* h = new Helper();
  // Ctrl-C belongs to the interpreter thread: helpers never take SIGINT.
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  std::thread([h] { h->Loop(); }).detach();
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return h;
}

}  // namespace

void StartOnHelper(std::shared_ptr<BlockingWait> w) {
  Helper* h = nullptr;
  {
    std::lock_guard<std::mutex> lock(IdleMutex());
    if (!Idle().empty()) {
      h = Idle().back();
      Idle().pop_back();
    }
  }
  if (!h) h = NewHelper();
  h->Give(std::move(w));
}

}  // namespace tessera::shell
