#include <cuda_runtime.h>

#include <memory>
#include <mutex>
#include <vector>

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

// Each thread records on its own stream only, so its ring needs no lock.
// Rings are never freed: a variable may name an event of a thread that has
// ended (kept reachable here, not leaked).
constexpr size_t kRingEvents = 1024;
struct EventRing {
  cudaEvent_t events[kRingEvents] = {};
  size_t next = 0;
};

EventRing* ThisThreadsRing() {
  thread_local EventRing* ring = nullptr;
  if (!ring) {
    static std::mutex mu;
    static std::vector<std::unique_ptr<EventRing>> all;
    std::lock_guard<std::mutex> lock(mu);
    ring = all.emplace_back(std::make_unique<EventRing>()).get();
  }
  return ring;
}

void* Record(void* stream) {
  EventRing* ring = ThisThreadsRing();
  cudaEvent_t& e = ring->events[ring->next++ % kRingEvents];
  if (!e) TS_CUDA_CALL(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  TS_CUDA_CALL(cudaEventRecord(e, static_cast<cudaStream_t>(stream)));
  return e;
}

void StreamWait(void* stream, void* event) {
  TS_CUDA_CALL(
      cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event), 0));
}

void EventSync(void* event) {
  TS_CUDA_CALL(cudaEventSynchronize(static_cast<cudaEvent_t>(event)));
}

bool EventDone(void* event) {
  const cudaError_t err = cudaEventQuery(static_cast<cudaEvent_t>(event));
  if (err == cudaErrorNotReady) return false;
  TS_CUDA_CALL(err);
  return true;
}

void DeviceSync(int dev_id) {
  const int prev = SetDevice(dev_id);
  const cudaError_t err = cudaDeviceSynchronize();
  SetDevice(prev);
  TS_CUDA_CALL(err);
}

const GpuStreamOps kOps{&NumGPUs, &SetDevice,  &Create,    &Sync,      &Destroy,
                        &Record,  &StreamWait, &EventSync, &EventDone, &DeviceSync};

}  // namespace

const GpuStreamOps* BuiltinGpuStreams() {
  return &kOps;
}

}  // namespace tessera::engine
