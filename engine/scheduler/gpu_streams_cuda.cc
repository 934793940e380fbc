#include <cuda_runtime.h>

#include "engine/base/cuda_utils.h"
#include "engine/scheduler/gpu_streams.h"

namespace tessera::engine {
namespace {

void* Create(int dev_id) {
  TS_CUDA_CALL(cudaSetDevice(dev_id));
  cudaStream_t s = nullptr;
  // Non-blocking: the engine orders work through variables, not through the
  // legacy default stream's implicit synchronisation.
  TS_CUDA_CALL(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}

void Sync(void* stream) {
  TS_CUDA_CALL(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
}

void Destroy(void* stream) {
  if (stream) cudaStreamDestroy(static_cast<cudaStream_t>(stream));
}

const GpuStreamOps kOps{&Create, &Sync, &Destroy};

}  // namespace

const GpuStreamOps* GpuStreams() {
  return &kOps;
}

}  // namespace tessera::engine
