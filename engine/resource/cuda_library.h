// What the CUDA libraries Tessera opens on first use (cuBLAS, cuSOLVER,
// cuDNN) share: opening the shared object (the default name, or the file an
// environment variable names), and a table of handles, one per (device,
// stream), each made the first time an op on that stream asks and kept for
// the process's life (handles are not thread-safe; a stream is served by
// one engine worker at a time). Include only from files built with CUDA.
#pragma once

#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <utility>

#include "engine/base/cuda_utils.h"

namespace tessera::resource {

// dlopen of `default_name`, or of the file `env` names; throws tessera::Error
// naming `what`, the file and `env` when it cannot be opened.
void* OpenCudaLibrary(const char* what, const char* default_name, const char* env);

template <typename Handle>
class StreamHandles {
 public:
  // The handle of `stream` on the current device: `make(stream, device)` the
  // first time (it returns the handle bound to the stream, or throws, and
  // then a later call tries again).
  template <typename Make>
  Handle Get(cudaStream_t stream, Make&& make) {
    int device = 0;
    TS_CUDA_CALL(cudaGetDevice(&device));
    std::lock_guard<std::mutex> lock(mu_);
    auto it = handles_.find({device, stream});
    if (it != handles_.end()) return it->second;
    const Handle h = make(stream, device);
    handles_.emplace(std::make_pair(device, stream), h);
    return h;
  }

 private:
  std::mutex mu_;
  std::map<std::pair<int, cudaStream_t>, Handle> handles_;
};

}  // namespace tessera::resource
