// A test-and-test-and-set lock for tiny critical sections (an engine
// variable's queue, a storage pool's free lists), where a mutex's atomic
// unlock and syscall path would cost more than the work it protects. After
// a short spin it yields, so a holder that lost its core gets it back.
#pragma once

#include <atomic>
#include <thread>

namespace tessera {

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

}  // namespace tessera
