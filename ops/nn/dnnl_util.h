// Shared helpers of the oneDNN-backed nn operators: the CPU engine, the
// OpenMP thread count of a call, and carving one temp-space block into the
// buffers a call needs.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace tessera::op::nn_dnnl {

// One CPU engine for the process (oneDNN engines are thread-safe).
inline const dnnl::engine& CpuEngine() {
  static const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// oneDNN's OpenMP runtime sizes its team from the calling thread's
// omp_get_max_threads(): set it for the call, restore it after.
class ScopedOmpThreads {
 public:
  explicit ScopedOmpThreads(int threads) {
#ifdef _OPENMP
    saved_ = omp_get_max_threads();
    if (threads > 0 && threads != saved_) omp_set_num_threads(threads);
#else
    (void)threads;
#endif
  }
  ~ScopedOmpThreads() {
#ifdef _OPENMP
    if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
#endif
  }
  ScopedOmpThreads(const ScopedOmpThreads&) = delete;
  ScopedOmpThreads& operator=(const ScopedOmpThreads&) = delete;

 private:
  [[maybe_unused]] int saved_ = 1;
};

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
