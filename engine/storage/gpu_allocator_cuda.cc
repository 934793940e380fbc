// cudaMalloc-backed memory for one GPU.
#include <cuda_runtime.h>

#include "engine/base/cuda_utils.h"
#include "engine/base/logging.h"
#include "engine/storage/cuda_allocators.h"
#include "engine/storage/format_bytes.h"

namespace tessera::storage {
namespace {

class GpuAllocator final : public RawAllocator {
 public:
  explicit GpuAllocator(int dev_id) : dev_id_(dev_id) {}

  void* Allocate(size_t bytes) override {
    CudaDeviceGuard guard(dev_id_);
    void* ptr = nullptr;
    const cudaError_t err = cudaMalloc(&ptr, bytes);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // not sticky, but later launch checks must not see it
      return nullptr;
    }
    TS_CHECK(err == cudaSuccess) << "cudaMalloc of " << FormatBytes(bytes) << " on gpu(" << dev_id_
                                 << ") failed: " << cudaGetErrorString(err);
    return ptr;
  }

  // cudaFree waits for the device to finish all work, which is why freed
  // blocks are pooled instead.
  void Deallocate(void* ptr, size_t /*bytes*/) noexcept override {
    int prev = -1;
    cudaGetDevice(&prev);
    if (prev != dev_id_) cudaSetDevice(dev_id_);
    const cudaError_t err = cudaFree(ptr);
    if (prev >= 0 && prev != dev_id_) cudaSetDevice(prev);
    // At process exit the runtime may already be gone; the memory goes with it.
    if (err != cudaSuccess && err != cudaErrorCudartUnloading) {
      TS_LOG(Warning) << "cudaFree on gpu(" << dev_id_ << ") failed: " << cudaGetErrorString(err);
    }
    if (err != cudaSuccess) cudaGetLastError();
  }

  std::string MemoryInfo() override {
    size_t free_bytes = 0, total_bytes = 0;
    int prev = -1;
    cudaGetDevice(&prev);
    if (prev != dev_id_) cudaSetDevice(dev_id_);
    const cudaError_t err = cudaMemGetInfo(&free_bytes, &total_bytes);
    if (prev >= 0 && prev != dev_id_) cudaSetDevice(prev);
    if (err != cudaSuccess) {
      cudaGetLastError();
      return {};
    }
    return "device has " + FormatBytes(free_bytes) + " free of " + FormatBytes(total_bytes);
  }

 private:
  const int dev_id_;
};

}  // namespace

std::unique_ptr<RawAllocator> NewGpuAllocator(int dev_id) {
  return std::make_unique<GpuAllocator>(dev_id);
}

}  // namespace tessera::storage
