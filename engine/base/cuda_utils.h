// Helpers for the CUDA parts; include only from files built with CUDA.
#pragma once

#include <cuda_runtime.h>

#include "engine/base/error.h"

// TS_CUDA_CALL(cudaMalloc(...)) throws tessera::Error naming the call and CUDA's reason.
// A failed call also records its error as the thread's last error, which the
// launch checks of later, unrelated ops would report: it is cleared first.
#define TS_CUDA_CALL(expr)                                                  \
  do {                                                                      \
    cudaError_t ts_cuda_err_ = (expr);                                      \
    if (ts_cuda_err_ != cudaSuccess) {                                      \
      cudaGetLastError();                                                   \
      TS_THROW << #expr << " failed: " << cudaGetErrorString(ts_cuda_err_); \
    }                                                                       \
  } while (0)

// Makes dev_id current on this thread and restores the previous device on exit.
class CudaDeviceGuard {
 public:
  explicit CudaDeviceGuard(int dev_id) {
    TS_CUDA_CALL(cudaGetDevice(&prev_));
    if (prev_ != dev_id) TS_CUDA_CALL(cudaSetDevice(dev_id));
  }
  ~CudaDeviceGuard() {
    if (cudaSetDevice(prev_) != cudaSuccess) cudaGetLastError();
  }
  CudaDeviceGuard(const CudaDeviceGuard&) = delete;
  CudaDeviceGuard& operator=(const CudaDeviceGuard&) = delete;

 private:
  int prev_ = 0;
};
