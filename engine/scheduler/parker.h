// A per-thread wake-up word. A thread that must wait reads the epoch, checks
// its condition, and parks until the epoch moves; whoever makes the condition
// true unparks it. Spurious wake-ups are allowed: callers always recheck.
#pragma once

#include <atomic>
#include <cstdint>

namespace tessera::engine {

class Parker;
namespace parker_detail {
// The calling thread's parker once it has one (parker.cc): every naive push
// asks for it.
extern constinit thread_local Parker* tls_parker;
}  // namespace parker_detail

class Parker {
 public:
  // The calling thread's parker. Parkers are recycled, never freed, so an
  // Unpark racing with its thread's exit touches valid memory.
  static Parker* Current() {
    Parker* p = parker_detail::tls_parker;
    return p ? p : MakeCurrent();
  }

  uint32_t Epoch() const { return epoch_.load(std::memory_order_acquire); }
  // Sleeps while the epoch is `epoch`. The sleeping flag, set before the
  // epoch is read again, tells Unpark to wake it: both sides order their
  // write before their read (seq_cst), so either this thread sees the new
  // epoch or the unparker sees the flag.
  void Park(uint32_t epoch) {
    sleeping_.store(true, std::memory_order_seq_cst);
    if (epoch_.load(std::memory_order_seq_cst) == epoch)
      epoch_.wait(epoch, std::memory_order_acquire);
    sleeping_.store(false, std::memory_order_relaxed);
  }
  // Wakes the thread when it sleeps, and only then: notify_one costs a
  // futex call whenever any thread waits on an atomic of the same hash bucket
  // in libstdc++'s table, which an engine with idle workers nearly always
  // has, and a wake per op is what a chain of ops on the naive engine did.
  void Unpark() {
    epoch_.fetch_add(1, std::memory_order_seq_cst);
    if (sleeping_.load(std::memory_order_seq_cst)) epoch_.notify_one();
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
  static Parker* MakeCurrent();
  std::atomic<uint32_t> epoch_{0};
  std::atomic<bool> sleeping_{false};
};

}  // namespace tessera::engine
