// Plain host memory, 64-byte aligned so vectorised kernels never straddle a
// cache line at the start of a tensor.
#pragma once

#include "engine/storage/raw_allocator.h"

namespace tessera::storage {

class CpuAllocator final : public RawAllocator {
 public:
  void* Allocate(size_t bytes) override;
  void Deallocate(void* ptr, size_t bytes) noexcept override;
};

}  // namespace tessera::storage
