// When a CPU loop is worth an OpenMP team. Starting and joining a team costs
// about a microsecond where its threads spin and tens of microseconds where
// they sleep between regions (passive waiting, the default here: 45 us
// measured on a 2-core virtual machine), so a loop runs on several threads
// only when its single-thread time, estimated from its kernel's measured cost
// per element, is a few times that. MXNet tunes its operators the same way
// (src/operator/operator_tune.h), from timings at start-up; here each kernel
// learns from its own calls.
//
//   static LaunchCost cost;                  // one per kernel
//   const int threads = cost.Threads(ctx, n);
//   LaunchTimer timer(cost, n, threads);     // times the loop when n is large
//   ... the loop on `threads` threads ...
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "engine/base/context.h"

namespace tessera::op {

// Elements from which a loop without a measured cost shares its work (the
// rule before a kernel has a cost, and for loops that keep none), and below
// which a loop stays on one thread whatever its cost.
inline constexpr int64_t kOmpMinElements = 32768;
inline constexpr int64_t kOmpMeasuredMinElements = 4096;

// Nanoseconds to start and join a team of `threads` on the calling thread,
// measured once per process (a few empty regions, the median), the first
// time a loop asks.
double OmpForkJoinNs(int threads);

class LaunchCost {
 public:
  // Threads for a loop over `n` elements: ctx.omp_threads when the loop's
  // estimated time is a few team start-ups, else one.
  int Threads(const RunContext& ctx, int64_t n) const {
    if (n < kOmpMeasuredMinElements || ctx.omp_threads <= 1) return 1;
    const float c = ns_per_element_.load(std::memory_order_relaxed);
    if (c <= 0.f) return n < kOmpMinElements ? 1 : ctx.omp_threads;
    return double(n) * c > kGain * OmpForkJoinNs(ctx.omp_threads) ? ctx.omp_threads : 1;
  }
  // A loop of `n` elements took `ns` on `threads` threads: the per-element
  // cost on one thread, averaged over calls.
  void Record(int64_t n, int threads, double ns);

 private:
  // With two threads a loop gains half its time at most, and memory-bound
  // loops less: share only past three team start-ups (measured: a float add
  // broke even at about 1M elements with a 45 us team start).
  static constexpr double kGain = 3.0;
  std::atomic<float> ns_per_element_{0.f};
};

// Times a loop of `n` elements (when large enough to share at all) and
// records it in `cost` when it ends.
class LaunchTimer {
 public:
  LaunchTimer(LaunchCost& cost, int64_t n, int threads)
      : cost_(n >= kOmpMeasuredMinElements ? &cost : nullptr), n_(n), threads_(threads) {
    if (cost_) t0_ = std::chrono::steady_clock::now();
  }
  ~LaunchTimer() {
    if (!cost_) return;
    const std::chrono::duration<double, std::nano> d = std::chrono::steady_clock::now() - t0_;
    cost_->Record(n_, threads_, d.count());
  }
  LaunchTimer(const LaunchTimer&) = delete;
  LaunchTimer& operator=(const LaunchTimer&) = delete;

 private:
  LaunchCost* cost_;
  int64_t n_;
  int threads_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace tessera::op
