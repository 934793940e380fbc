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
