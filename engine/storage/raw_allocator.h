// The system side of a memory pool: how one kind of device memory is obtained
// and returned (aligned malloc, cudaMalloc, cudaHostAlloc). The pool above it
// owns bucketing, reuse, statistics and error reporting.
#pragma once

#include <cstddef>
#include <string>

namespace tessera::storage {

class RawAllocator {
 public:
  virtual ~RawAllocator() = default;
  // Returns null when the device is out of memory, so the pool can release
  // its cached blocks and retry; throws tessera::Error for any other failure.
  virtual void* Allocate(size_t bytes) = 0;
  // Must not throw: it runs on free paths and at thread and process exit.
  virtual void Deallocate(void* ptr, size_t bytes) noexcept = 0;
  // Extra detail for an out-of-memory message ("device has 1 GiB free of 80
  // GiB"), or empty.
  virtual std::string MemoryInfo() { return {}; }
};

}  // namespace tessera::storage
