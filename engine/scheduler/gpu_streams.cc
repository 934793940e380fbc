#include "engine/scheduler/gpu_streams.h"

#include <algorithm>
#include <atomic>

#include "engine/base/error.h"

namespace tessera::engine {

// The build's own table: CUDA's in gpu_streams_cuda.cc, none without CUDA.
const GpuStreamOps* BuiltinGpuStreams();

namespace {
std::atomic<const GpuStreamOps*> g_for_testing{nullptr};
}  // namespace

#ifndef TESSERA_WITH_CUDA
const GpuStreamOps* BuiltinGpuStreams() {
  return nullptr;
}
#endif

const GpuStreamOps* GpuStreams() {
  const GpuStreamOps* ops = g_for_testing.load(std::memory_order_acquire);
  return ops ? ops : BuiltinGpuStreams();
}

const GpuStreamOps& GpuStreamsFor(Context ctx, int max_gpus) {
  const GpuStreamOps* ops = GpuStreams();
  TS_CHECK(ops) << ctx.ToString() << ": this build has no CUDA";
  const int n = ops->num_gpus();
  TS_CHECK(ctx.dev_id >= 0 && ctx.dev_id < std::min(n, max_gpus))
      << ctx.ToString() << " is not available: " << n << (n == 1 ? " GPU" : " GPUs");
  return *ops;
}

void SetGpuStreamsForTesting(const GpuStreamOps* ops) {
  g_for_testing.store(ops, std::memory_order_release);
}

}  // namespace tessera::engine
