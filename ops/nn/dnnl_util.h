// Shared helpers of the oneDNN-backed nn operators: the CPU engine, the
// OpenMP thread count of a call (ops/registry/omp_threads.h), and carving
// one temp-space block into the buffers a call needs.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ops/registry/omp_threads.h"

namespace tessera::op::nn_dnnl {

// One CPU engine for the process (oneDNN engines are thread-safe).
inline const dnnl::engine& CpuEngine() {
  static const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// The OpenMP thread count of a call.
using op::ScopedOmpThreads;

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
