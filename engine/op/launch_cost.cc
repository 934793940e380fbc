#include "engine/op/launch_cost.h"

#include <algorithm>
#include <array>
#include <mutex>
#include <thread>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace tessera::op {
namespace {

double MeasureForkJoinNs([[maybe_unused]] int threads) {
  std::array<double, 7> t{};
#ifdef _OPENMP
  volatile int sink = 0;
  for (int i = -2; i < int(t.size()); ++i) {  // two warm-ups
    // Each after a pause: between ops a team's threads go to sleep, and
    // waking them is what a loop pays. Regions back to back would find them
    // spinning and measure a start 20 times cheaper (3 against 60 us on a
    // 2-core virtual machine), which shared 64K-element adds at 5x their time.
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
    { sink = sink + 1; }
    const std::chrono::duration<double, std::nano> d = std::chrono::steady_clock::now() - t0;
    if (i >= 0) t[size_t(i)] = d.count();
  }
#endif
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

}  // namespace

double OmpForkJoinNs(int threads) {
  // One figure per thread count: teams of one size are what a process uses.
  static std::atomic<double> measured[65];
  static std::mutex mu;
  const int slot = std::clamp(threads, 0, 64);
  double v = measured[slot].load(std::memory_order_relaxed);
  if (v > 0) return v;
  std::lock_guard<std::mutex> lock(mu);
  v = measured[slot].load(std::memory_order_relaxed);
  if (v <= 0) {
    v = std::max(1.0, MeasureForkJoinNs(threads));
    measured[slot].store(v, std::memory_order_relaxed);
  }
  return v;
}

void LaunchCost::Record(int64_t n, int threads, double ns) {
  // A parallel run's single-thread equivalent: its time less the team's
  // start, times the threads.
  if (threads > 1) ns = std::max(0.0, ns - OmpForkJoinNs(threads)) * threads;
  // Never 0, which means not measured yet.
  const float c = std::max(1e-6f, float(ns / double(n)));
  const float old = ns_per_element_.load(std::memory_order_relaxed);
  // An average over the last few calls; racing updates lose one sample.
  ns_per_element_.store(old <= 0.f ? c : 0.75f * old + 0.25f * c, std::memory_order_relaxed);
}

}  // namespace tessera::op
