// Host synchronisations inside engine ops: an op that waits for its GPU
// stream (to read values it checks on the host, or to finish a copy between
// host and GPU memory) holds its worker until the GPU has drained the stream, so the
// next kernels are not queued while it waits. A training step should have
// none between the waits its script asks for; each one is counted here
// (mx.profiler.host_syncs()) and, while the profiler records, shown in its
// trace as a span named after what waited. The profiler lives above this
// layer, so it listens through the hook below (as memory_events.h).
#pragma once

#include <atomic>
#include <cstdint>

namespace tessera {

// `who` waited on the host for `wait_ns` nanoseconds, ending now.
using HostSyncListener = void (*)(const char* who, uint64_t wait_ns);

// nullptr stops the reports to the listener; the count goes on.
void SetHostSyncListener(HostSyncListener listener);
// Counts the wait and tells the listener, if any.
void ReportHostSync(const char* who, uint64_t wait_ns);
// Host synchronisations reported since the process started.
uint64_t HostSyncCount();

}  // namespace tessera
