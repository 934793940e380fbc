// cudaMalloc-backed memory for one GPU.
#include <cuda_runtime.h>

#include "engine/base/cuda_utils.h"
#include "engine/base/format_bytes.h"
#include "engine/base/logging.h"
#include "engine/storage/cuda_allocators.h"

namespace tessera::storage {
namespace {

class GpuAllocator final : public RawAllocator {
 public:
  explicit GpuAllocator(int dev_id) : dev_id_(dev_id) {}

  void* Allocate(size_t bytes) override {
    CudaDeviceGuard guard(dev_id_);
    void* ptr = nullptr;
    const cudaError_t err = cudaMalloc(&ptr, bytes);
    if (err != cudaSuccess) cudaGetLastError();  // later launch checks must not see it
    if (err == cudaErrorMemoryAllocation) return nullptr;
    TS_CHECK(err == cudaSuccess) << "cudaMalloc of " << FormatBytes(bytes) << " on gpu(" << dev_id_
                                 << ") failed: " << cudaGetErrorString(err);
    return ptr;
  }

  // cudaFree waits for the device to finish all work, which is why freed
  // blocks are pooled instead.
  void Deallocate(void* ptr, size_t /*bytes*/) noexcept override {
    // No CudaDeviceGuard: it throws, and this must not. Every failure here is
    // cleared, or a later op's launch check on this thread would report it.
    int prev = -1;
    if (cudaGetDevice(&prev) != cudaSuccess) cudaGetLastError();
    if (prev != dev_id_ && cudaSetDevice(dev_id_) != cudaSuccess) cudaGetLastError();
    const cudaError_t err = cudaFree(ptr);
    if (prev >= 0 && prev != dev_id_ && cudaSetDevice(prev) != cudaSuccess) cudaGetLastError();
    // At process exit the runtime may already be gone; the memory goes with it.
    if (err != cudaSuccess && err != cudaErrorCudartUnloading) {
      TS_LOG(Warning) << "cudaFree on gpu(" << dev_id_ << ") failed: " << cudaGetErrorString(err);
    }
    if (err != cudaSuccess) cudaGetLastError();
  }

  std::string MemoryInfo() override {
    try {
      const DeviceMemory m = QueryGpuMemory(dev_id_);
      return "device has " + FormatBytes(m.free_bytes) + " free of " + FormatBytes(m.total_bytes);
    } catch (const Error&) {
      return {};  // detail for an out-of-memory message; that message matters more
    }
  }

 private:
  const int dev_id_;
};

}  // namespace

DeviceMemory QueryGpuMemory(int dev_id) {
  CudaDeviceGuard guard(dev_id);
  DeviceMemory m;
  const cudaError_t err = cudaMemGetInfo(&m.free_bytes, &m.total_bytes);
  if (err != cudaSuccess) cudaGetLastError();
  TS_CHECK(err == cudaSuccess) << "cudaMemGetInfo on gpu(" << dev_id
                               << ") failed: " << cudaGetErrorString(err);
  return m;
}

std::unique_ptr<RawAllocator> NewGpuAllocator(int dev_id) {
  return std::make_unique<GpuAllocator>(dev_id);
}

}  // namespace tessera::storage
