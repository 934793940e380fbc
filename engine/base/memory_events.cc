#include "engine/base/memory_events.h"

namespace tessera {

std::atomic<MemoryListener> g_memory_listener{nullptr};

void SetMemoryListener(MemoryListener listener) {
  g_memory_listener.store(listener, std::memory_order_relaxed);
}

void ReportMemory(Context ctx, size_t in_use, size_t pooled) {
  if (MemoryListener l = g_memory_listener.load(std::memory_order_relaxed)) l(ctx, in_use, pooled);
}

}  // namespace tessera
