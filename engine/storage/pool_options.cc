#include "engine/storage/pool_options.h"

#include <unistd.h>

#include <string>

#include "engine/base/env.h"

namespace tessera::storage {
namespace {

size_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<size_t>(pages) * static_cast<size_t>(page_size);
}

size_t PoolCap(const char* knob, size_t fallback) {
  if (EnvString(knob, "").empty()) return fallback;
  const int64_t v = EnvInt(knob, 0);
  return v < 0 ? SIZE_MAX : static_cast<size_t>(v);
}

}  // namespace

PoolOptions PoolOptionsFromEnv(bool gpu) {
  PoolOptions options;
  options.pooling = EnvBool("TESSERA_STORAGE_POOL", true);
  if (gpu) {
    options.max_pooled_bytes = PoolCap("TESSERA_GPU_POOL_MAX_BYTES", SIZE_MAX);
  } else {
    // Host memory is shared with everything else on the machine; a pool that
    // kept every freed block could starve other processes.
    const size_t ram = PhysicalMemoryBytes();
    options.max_pooled_bytes = PoolCap("TESSERA_CPU_POOL_MAX_BYTES", ram ? ram / 4 : SIZE_MAX);
  }
  return options;
}

}  // namespace tessera::storage
