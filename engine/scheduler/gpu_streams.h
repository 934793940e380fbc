// The CUDA stream operations the engine needs, behind a table so that the
// scheduler compiles without CUDA. Null in a build without CUDA.
#pragma once

namespace tessera::engine {

struct GpuStreamOps {
  void* (*create)(int dev_id);  // makes dev_id current on this thread, returns a new stream
  void (*sync)(void* stream);   // waits for the stream; throws tessera::Error on a CUDA error
  void (*destroy)(void* stream);
};

const GpuStreamOps* GpuStreams();

}  // namespace tessera::engine
