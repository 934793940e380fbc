#include "engine/scheduler/gpu_streams.h"

namespace tessera::engine {

#ifndef TESSERA_WITH_CUDA
const GpuStreamOps* GpuStreams() {
  return nullptr;
}
#endif

}  // namespace tessera::engine
