// The host's wait for a CUDA stream, reported (host_sync.h): the one way an
// op or a copy between host and GPU memory waits for its stream. Include only from
// files built with CUDA.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>

#include "engine/base/cuda_utils.h"
#include "engine/base/host_sync.h"

namespace tessera {

// Blocks until `stream` has drained; `who` names the wait in the count and
// the profiler's trace ("op values to the host",
// "copy to or from host memory", ...).
inline void WaitForStreamOnHost(cudaStream_t stream, const char* who) {
  const auto t0 = std::chrono::steady_clock::now();
  TS_CUDA_CALL(cudaStreamSynchronize(stream));
  const auto waited = std::chrono::steady_clock::now() - t0;
  ReportHostSync(who,
                 uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(waited).count()));
}

}  // namespace tessera
