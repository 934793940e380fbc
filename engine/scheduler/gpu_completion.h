// An op on a GPU stream completes once its work is queued (gpu_fence.h says
// how its variables then carry the events); these are the steps the engine
// takes around each op for it. Without a GPU nothing is ever queued, and
// every step is one relaxed load.
#pragma once

#include <span>

#include "engine/scheduler/engine.h"

namespace tessera::engine {

using VarSpan = std::span<VarHandle const>;

namespace detail {
bool GpuWorkEverQueued();
}  // namespace detail

// Whether any op has completed on an event in this process.
inline bool GpuWorkEverQueued() {
  return detail::GpuWorkEverQueued();
}

// Before an op runs: its stream (or, for a null stream, the host) waits for
// the GPU work queued on its variables. Throws on a CUDA error.
void WaitForQueuedGpuWork(VarSpan reads, VarSpan writes, void* stream);
// After an op queued its work on `stream` without waiting for it: an event
// behind that work goes into its variables' fences. Throws on a CUDA error.
void MarkQueuedGpuWork(VarSpan reads, VarSpan writes, void* stream);
// After an op's stream was synchronised: what it wrote has nothing queued.
void ClearQueuedGpuWork(VarSpan writes);
// The host waits for the GPU work queued on `var`; throws on a CUDA error.
void HostWaitForGpuWork(VarHandle var);
// Whether the GPU work queued on `var` has finished, without waiting.
bool GpuWorkFinished(VarHandle var);

}  // namespace tessera::engine
