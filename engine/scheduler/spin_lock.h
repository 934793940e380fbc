// A test-and-test-and-set lock for the engine's tiny critical sections (a
// variable's queue), where a mutex's syscall path would cost more than the
// work it protects.
#pragma once

#include <atomic>
#include <thread>

namespace tessera::engine {

class SpinLock {
 public:
  void lock() {
    for (int spins = 0; locked_.exchange(true, std::memory_order_acquire); ++spins) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins > 64) std::this_thread::yield();
#if defined(__x86_64__)
        else
          __builtin_ia32_pause();
#endif
      }
    }
  }
  void unlock() {
    locked_.store(false, std::memory_order_release);
  }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace tessera::engine
