// The CUDA operations the engine needs, behind a table so that the scheduler
// compiles without CUDA and its GPU lanes can be tested on fake streams.
// Null in a build without CUDA (unless a test installs a table).
#pragma once

#include "engine/base/context.h"

namespace tessera::engine {

struct GpuStreamOps {
  int (*num_gpus)();              // the GPUs the engine may run on
  int (*set_device)(int dev_id);  // makes dev_id current on this thread; returns the previous
  void* (*create)(int dev_id);    // makes dev_id current on this thread, returns a new stream
  void (*sync)(void* stream);     // waits for the stream; throws tessera::Error on a CUDA error
  void (*destroy)(void* stream);  // must not throw
  // Completion through events (gpu_fence.h); a table without `record` makes
  // every GPU op wait for its stream instead. The events `record` returns
  // stay valid for the process: each thread recycles its own ring of them,
  // so an old event may stand for a later point of the same stream (a wait
  // on it waits longer, never less).
  void* (*record)(void* stream);                   // an event after the work queued on stream
  void (*stream_wait)(void* stream, void* event);  // stream's later work waits for the event
  void (*event_sync)(void* event);  // the host waits; throws tessera::Error on a CUDA error
  bool (*event_done)(void* event);  // whether it has passed; throws as event_sync
  void (*device_sync)(int dev_id);  // the host waits for all of the device's streams
};

const GpuStreamOps* GpuStreams();

// GpuStreams() for running an op on gpu(i): throws tessera::Error when the
// build has no CUDA or gpu(i) is not there (or i >= max_gpus).
const GpuStreamOps& GpuStreamsFor(Context ctx, int max_gpus);

// Tests: makes GpuStreams() return `ops` (null: the build's own again). Only
// engines created afterwards are sure to use it: a running threaded engine
// keeps the streams its GPU workers made.
void SetGpuStreamsForTesting(const GpuStreamOps* ops);

}  // namespace tessera::engine
