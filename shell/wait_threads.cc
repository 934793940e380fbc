#include "wait_threads.h"

#include <pthread.h>

#include <condition_variable>
#include <csignal>
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

std::mutex g_idle_mu;
std::vector<Helper*> g_idle;  // helpers live as long as the process

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
    w->done.store(true, std::memory_order_release);
    if (w->on_done) w->on_done();
    w.reset();
    std::lock_guard<std::mutex> lock(g_idle_mu);
    g_idle.push_back(this);
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
    std::lock_guard<std::mutex> lock(g_idle_mu);
    if (!g_idle.empty()) {
      h = g_idle.back();
      g_idle.pop_back();
    }
  }
  if (!h) h = NewHelper();
  h->Give(std::move(w));
}

}  // namespace tessera::shell
