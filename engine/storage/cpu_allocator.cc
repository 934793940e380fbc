#include "engine/storage/cpu_allocator.h"

#include <cstdlib>

#include "engine/storage/bucket.h"

namespace tessera::storage {

void* CpuAllocator::Allocate(size_t bytes) {
  // aligned_alloc wants a size that is a multiple of the alignment.
  return std::aligned_alloc(kAlignment, RoundUpTo(bytes, kAlignment));
}

void CpuAllocator::Deallocate(void* ptr, size_t /*bytes*/) noexcept {
  std::free(ptr);
}

}  // namespace tessera::storage
