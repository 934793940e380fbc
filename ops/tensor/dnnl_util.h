// Shared helpers of the oneDNN-backed operators: the CPU engine, the
// OpenMP thread count of a call (engine/op/omp_threads.h), a cache of
// primitives by shape, running one primitive, and carving one temp-space
// block into the buffers a call needs.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/op/omp_threads.h"
#include "ops/tensor/dnnl_lazy.h"

namespace tessera::op::nn_dnnl {

// One CPU engine for the process (oneDNN engines are thread-safe).
inline const dnnl::engine& CpuEngine() {
  static const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// The OpenMP thread count of a call.
using op::EffectiveOmpThreads;
using op::ScopedOmpThreads;

// Primitives built once per key (a geometry) and thread count, shared by
// every call and thread. oneDNN fixes a primitive's team size when it builds
// it (the OpenMP maximum of the building thread), whatever the setting when
// it runs: so `make` runs under the call's count, and a count is part of the
// key. Without that, a primitive first built on a worker given 2 threads runs
// 2 on a worker given 1, and two such workers oversubscribe two cores.
// Bounded: past 64 keys (a shape-changing workload) it starts over; callers
// hold what they took.
template <typename Key, typename Value>
class PrimitiveCache {
 public:
  // The value for `key` on `threads` OpenMP threads (<= 0: the calling
  // thread's setting), made by `make()` (which may throw) on first use.
  template <typename Make>
  std::shared_ptr<Value> Get(const Key& key, int threads, Make make) {
    const int team = EffectiveOmpThreads(threads);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find({team, key});
    if (it != map_.end()) return it->second;
    if (map_.size() >= 64) map_.clear();
    ScopedOmpThreads scoped(team);
    std::shared_ptr<Value> v = make();
    map_.emplace(std::pair<int, Key>{team, key}, v);
    return v;
  }

 private:
  std::mutex mu_;
  std::map<std::pair<int, Key>, std::shared_ptr<Value>> map_;
};

// Runs `prim` on `threads` OpenMP threads and waits for it.
inline void RunPrimitive(const dnnl::primitive& prim,
                         const std::unordered_map<int, dnnl::memory>& args, int threads) {
  ScopedOmpThreads scoped(threads);
  dnnl::stream s(CpuEngine());
  prim.execute(s, args);
  s.wait();
}

// Lays out several buffers in one block: Add() returns an offset, Total() the
// block size, each buffer 64-byte aligned.
class Carver {
 public:
  size_t Add(size_t bytes) {
    const size_t at = total_;
    total_ += (bytes + 63) / 64 * 64;
    return at;
  }
  size_t Total() const { return total_ ? total_ : 64; }

 private:
  size_t total_ = 0;
};

}  // namespace tessera::op::nn_dnnl
