#include "engine/base/host_sync.h"

namespace tessera {

namespace {
std::atomic<HostSyncListener> g_listener{nullptr};
std::atomic<uint64_t> g_count{0};
}  // namespace

void SetHostSyncListener(HostSyncListener listener) {
  g_listener.store(listener, std::memory_order_relaxed);
}

void ReportHostSync(const char* who, uint64_t wait_ns) {
  g_count.fetch_add(1, std::memory_order_relaxed);
  if (HostSyncListener l = g_listener.load(std::memory_order_relaxed)) l(who, wait_ns);
}

uint64_t HostSyncCount() {
  return g_count.load(std::memory_order_relaxed);
}

}  // namespace tessera
