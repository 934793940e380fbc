// A per-thread wake-up word. A thread that must wait reads the epoch, checks
// its condition, and parks until the epoch moves; whoever makes the condition
// true unparks it. Spurious wake-ups are allowed: callers always recheck.
#pragma once

#include <atomic>
#include <cstdint>

namespace tessera::engine {

class Parker {
 public:
  // The calling thread's parker. Parkers are recycled, never freed, so an
  // Unpark racing with its thread's exit touches valid memory.
  static Parker* Current();

  uint32_t Epoch() const { return epoch_.load(std::memory_order_acquire); }
  void Park(uint32_t epoch) { epoch_.wait(epoch, std::memory_order_acquire); }
  void Unpark() {
    epoch_.fetch_add(1, std::memory_order_release);
    epoch_.notify_one();
  }

  // Parks until done() holds. Spins a few microseconds first: engine waits
  // are often that short, and a futex sleep and wake costs more.
  template <typename Cond>
  void ParkUntil(Cond done) {
    for (int i = 0; i < kSpins; ++i) {
      if (done()) return;
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
    while (!done()) {
      uint32_t e = Epoch();
      if (done()) break;
      Park(e);
    }
  }

  Parker* next_free = nullptr;  // free-list link while unowned
  static constexpr int kSpins = 256;

 private:
  std::atomic<uint32_t> epoch_{0};
};

}  // namespace tessera::engine
