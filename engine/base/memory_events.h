// Memory over time, for the profiler: the storage layer reports each
// device's bytes in use and pooled after every allocation and free while a
// listener is set (mx.profiler.set_config{profile_memory = true}). The
// listener lives in a layer above storage (the profiler), so the two meet
// here, below both. With none set, a report is one relaxed atomic load.
#pragma once

#include <atomic>
#include <cstddef>

#include "engine/base/context.h"

namespace tessera {

using MemoryListener = void (*)(Context ctx, size_t in_use, size_t pooled);

extern std::atomic<MemoryListener> g_memory_listener;

inline bool MemoryListened() {
  return g_memory_listener.load(std::memory_order_relaxed) != nullptr;
}
// nullptr stops the reports.
void SetMemoryListener(MemoryListener listener);
void ReportMemory(Context ctx, size_t in_use, size_t pooled);

}  // namespace tessera
