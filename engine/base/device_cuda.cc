// Device discovery for CUDA builds. A build with CUDA on a machine without a
// GPU (or without a driver) reports zero devices instead of failing.
#include <cuda_runtime.h>

#include "engine/base/context.h"

namespace tessera {

int NumGPUs() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();  // clear the sticky "no device" error
      return 0;
    }
    return n;
  }();
  return count;
}

bool BuiltWithCUDA() {
  return true;
}

}  // namespace tessera
