#include "engine/scheduler/gpu_fence.h"

#include <mutex>

#include "engine/base/error.h"
#include "engine/scheduler/gpu_streams.h"

namespace tessera::engine {

int GpuFence::Snapshot(Entry* out) {
  std::lock_guard<SpinLock> lock(lock_);
  const int n = count_.load(std::memory_order_relaxed);
  for (int i = 0; i < n; ++i) out[i] = entries_[i];
  return n;
}

void GpuFence::RemoveAt(int i) {
  const int n = count_.load(std::memory_order_relaxed);
  TS_DCHECK(i >= 0 && i < n);  // an entry that is there
  entries_[i] = entries_[n - 1];
  count_.store(n - 1, std::memory_order_release);
}

void GpuFence::Drop(const Entry* waited, int n_waited) {
  std::lock_guard<SpinLock> lock(lock_);
  for (int w = 0; w < n_waited; ++w)
    for (int i = 0; i < count_.load(std::memory_order_relaxed); ++i)
      if (entries_[i].serial == waited[w].serial) {
        RemoveAt(i);
        break;
      }
}

void GpuFence::QueueWaits(const GpuStreamOps& ops, void* stream) {
  Entry e[kMaxEntries];
  const int n = Snapshot(e);
  for (int i = 0; i < n; ++i)
    if (e[i].stream != stream) ops.stream_wait(stream, e[i].event);
}

void GpuFence::HostWait(const GpuStreamOps& ops) {
  Entry e[kMaxEntries];
  const int n = Snapshot(e);
  if (n == 0) return;
  for (int i = 0; i < n; ++i) ops.event_sync(e[i].event);
  Drop(e, n);
}

bool GpuFence::Passed(const GpuStreamOps& ops) {
  Entry e[kMaxEntries];
  const int n = Snapshot(e);
  for (int i = 0; i < n; ++i)
    if (!ops.event_done(e[i].event)) return false;
  Drop(e, n);
  return true;
}

void GpuFence::AfterWrite(void* stream, void* event, uint64_t serial) {
  std::lock_guard<SpinLock> lock(lock_);
  entries_[0] = {stream, event, serial};
  count_.store(1, std::memory_order_release);
}

void GpuFence::AfterRead(const GpuStreamOps& ops, void* stream, void* event, uint64_t serial) {
  for (;;) {
    Entry oldest{};
    {
      std::lock_guard<SpinLock> lock(lock_);
      const int n = count_.load(std::memory_order_relaxed);
      for (int i = 0; i < n; ++i)
        if (entries_[i].stream == stream) {  // stream order: the new event implies the old
          entries_[i] = {stream, event, serial};
          return;
        }
      if (n < kMaxEntries) {
        entries_[n] = {stream, event, serial};
        count_.store(n + 1, std::memory_order_release);
        return;
      }
      oldest = entries_[0];
      for (int i = 1; i < n; ++i)
        if (entries_[i].serial < oldest.serial) oldest = entries_[i];
    }
    // More streams read this version than there are places: wait for the
    // oldest reader on the host to make room (rare: kMaxEntries streams).
    ops.event_sync(oldest.event);
    Drop(&oldest, 1);
  }
}

void GpuFence::Clear() {
  std::lock_guard<SpinLock> lock(lock_);
  count_.store(0, std::memory_order_release);
}

}  // namespace tessera::engine
