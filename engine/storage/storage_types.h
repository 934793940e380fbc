// The values Storage hands out and reports; shared by Storage and its pools.
#pragma once

#include <cstddef>

#include "engine/base/array_bytes.h"
#include "engine/base/context.h"

namespace tessera::storage {

// A block of device memory. `size` is the size asked for; the block may be
// larger (rounded up to its size class). A zero-byte block has a null dptr.
struct Handle {
  void* dptr = nullptr;
  size_t size = 0;
  Context ctx;
};

// Byte counts are of whole blocks as reserved from the device, so they say how
// much memory tessera really holds.
struct StorageStats {
  size_t bytes_in_use = 0;       // in blocks handed out and not yet freed
  size_t bytes_pooled = 0;       // in freed blocks kept for reuse
  size_t peak_bytes_in_use = 0;  // highest bytes_in_use so far
  size_t num_allocs = 0;         // allocations that went to the system
  size_t num_pool_hits = 0;      // allocations served from the pool
};

// A device's memory as its driver sees it, for every process together.
struct DeviceMemory {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
};

// Nothing asks any device for more than this: a larger request is a wrong
// shape, not a real need, and rounding it up could overflow. The same bound
// as the largest array, which arrays are checked against when they are made.
inline constexpr size_t kMaxAllocBytes = kMaxArrayBytes;  // 128 TiB

}  // namespace tessera::storage
