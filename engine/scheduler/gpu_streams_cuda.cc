#include <cuda_runtime.h>

#include "engine/base/context.h"
#include "engine/base/cuda_utils.h"
#include "engine/scheduler/gpu_streams.h"

namespace tessera::engine {

const GpuStreamOps* BuiltinGpuStreams();

namespace {

// At process exit (static destructors freeing device memory through the
// engine) the runtime may already be unloading: nothing can run any more,
// and a throw here would escape a destructor, so it is not an error.
int SetDevice(int dev_id) {
  int prev = 0;
  const cudaError_t err = cudaGetDevice(&prev);
  if (err == cudaErrorCudartUnloading) {
    cudaGetLastError();
    return dev_id;
  }
  TS_CUDA_CALL(err);
  if (prev != dev_id) TS_CUDA_CALL(cudaSetDevice(dev_id));
  return prev;
}

// No stream while CUDA unloads at exit: a worker without one fails its ops
// (engine_base.cc), where a throw here would escape a destructor.
void* Create(int dev_id) {
  const cudaError_t err = cudaSetDevice(dev_id);
  if (err == cudaErrorCudartUnloading) {
    cudaGetLastError();
    return nullptr;
  }
  TS_CUDA_CALL(err);
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
  if (stream && cudaStreamDestroy(static_cast<cudaStream_t>(stream)) != cudaSuccess)
    cudaGetLastError();  // at exit the runtime may be gone; later calls must not see it
}

const GpuStreamOps kOps{&NumGPUs, &SetDevice, &Create, &Sync, &Destroy};

}  // namespace

const GpuStreamOps* BuiltinGpuStreams() {
  return &kOps;
}

}  // namespace tessera::engine
