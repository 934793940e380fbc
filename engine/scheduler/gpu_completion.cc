#include "engine/scheduler/gpu_completion.h"

#include <atomic>

#include "engine/base/error.h"
#include "engine/scheduler/gpu_streams.h"
#include "engine/scheduler/var.h"

namespace tessera::engine {
namespace {

// Set by the first op that completes on an event; the fences' own ordering
// comes from the engine's grants, so a relaxed flag is enough.
std::atomic<bool> g_ever_queued{false};
// Serials tell a fence's entries apart (gpu_fence.h).
std::atomic<uint64_t> g_serial{0};

}  // namespace

bool detail::GpuWorkEverQueued() {
  return g_ever_queued.load(std::memory_order_relaxed);
}

void WaitForQueuedGpuWork(VarSpan reads, VarSpan writes, void* stream) {
  if (!GpuWorkEverQueued()) return;
  const GpuStreamOps* ops = GpuStreams();
  for (VarSpan list : {reads, writes})
    for (VarHandle v : list) {
      if (v->fence.empty()) continue;
      if (stream)
        v->fence.QueueWaits(*ops, stream);
      else
        v->fence.HostWait(*ops);
    }
}

void MarkQueuedGpuWork(VarSpan reads, VarSpan writes, void* stream) {
  const GpuStreamOps* ops = GpuStreams();
  TS_DCHECK(ops && ops->record);  // the engine checked the table completes on events
  void* event = ops->record(stream);
  const uint64_t serial = g_serial.fetch_add(1, std::memory_order_relaxed) + 1;
  for (VarHandle v : writes) v->fence.AfterWrite(stream, event, serial);
  for (VarHandle v : reads) v->fence.AfterRead(*ops, stream, event, serial);
  g_ever_queued.store(true, std::memory_order_relaxed);
}

void ClearQueuedGpuWork(VarSpan writes) {
  if (!GpuWorkEverQueued()) return;
  for (VarHandle v : writes) v->fence.Clear();
}

void HostWaitForGpuWork(VarHandle var) {
  if (GpuWorkEverQueued() && !var->fence.empty()) var->fence.HostWait(*GpuStreams());
}

bool GpuWorkFinished(VarHandle var) {
  return !GpuWorkEverQueued() || var->fence.empty() || var->fence.Passed(*GpuStreams());
}

}  // namespace tessera::engine
