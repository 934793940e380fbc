// How a device's pool behaves, and the TESSERA_* knobs that set it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::storage {

struct PoolOptions {
  bool pooling = true;                 // false: every Free returns memory to the system
  size_t max_pooled_bytes = SIZE_MAX;  // a Free that would pool more goes to the system
};

// Reads the environment now (Storage calls it once, at first use):
//   TESSERA_STORAGE_POOL=0          pooling off
//   TESSERA_CPU_POOL_MAX_BYTES=N    cap for CPU and pinned pools (default: a
//                                   quarter of physical memory)
//   TESSERA_GPU_POOL_MAX_BYTES=N    cap for GPU pools (default: none)
// A negative cap means no limit. A malformed value is an Error naming it.
PoolOptions PoolOptionsFromEnv(bool gpu);

}  // namespace tessera::storage
