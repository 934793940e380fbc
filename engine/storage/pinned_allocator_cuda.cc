// Page-locked host memory for staging host<->device copies.
#include <cuda_runtime.h>

#include "engine/base/context.h"
#include "engine/base/cuda_utils.h"
#include "engine/base/format_bytes.h"
#include "engine/base/logging.h"
#include "engine/storage/cuda_allocators.h"

namespace tessera::storage {
namespace {

class PinnedAllocator final : public RawAllocator {
 public:
  // cpu_pinned(i) prefers GPU i's context; the block is portable, so any
  // device can copy from it.
  explicit PinnedAllocator(int dev_id) : dev_id_(dev_id < NumGPUs() ? dev_id : 0) {}

  void* Allocate(size_t bytes) override {
    CudaDeviceGuard guard(dev_id_);
    void* ptr = nullptr;
    const cudaError_t err = cudaHostAlloc(&ptr, bytes, cudaHostAllocPortable);
    if (err != cudaSuccess) cudaGetLastError();  // later launch checks must not see it
    if (err == cudaErrorMemoryAllocation) return nullptr;
    TS_CHECK(err == cudaSuccess) << "cudaHostAlloc of " << FormatBytes(bytes)
                                 << " failed: " << cudaGetErrorString(err);
    return ptr;
  }

  void Deallocate(void* ptr, size_t /*bytes*/) noexcept override {
    const cudaError_t err = cudaFreeHost(ptr);
    if (err != cudaSuccess && err != cudaErrorCudartUnloading) {
      TS_LOG(Warning) << "cudaFreeHost failed: " << cudaGetErrorString(err);
    }
    if (err != cudaSuccess) cudaGetLastError();
  }

 private:
  const int dev_id_;
};

}  // namespace

std::unique_ptr<RawAllocator> NewPinnedAllocator(int dev_id) {
  return std::make_unique<PinnedAllocator>(dev_id);
}

}  // namespace tessera::storage
