// The CUDA-backed RawAllocators. Declared for every build but defined only in
// *_cuda.cc files, which CMake compiles when CUDA is found; callers guard
// their use with TESSERA_WITH_CUDA so a CPU-only build references no CUDA
// symbol.
#pragma once

#include <memory>

#include "engine/storage/raw_allocator.h"
#include "engine/storage/storage_types.h"

namespace tessera::storage {

// cudaMalloc on device dev_id (256-byte aligned).
std::unique_ptr<RawAllocator> NewGpuAllocator(int dev_id);
// Page-locked host memory (cudaHostAlloc, portable across devices), so
// host<->device copies run asynchronously at full bandwidth.
std::unique_ptr<RawAllocator> NewPinnedAllocator(int dev_id);
// cudaMemGetInfo on device dev_id; throws tessera::Error if CUDA fails.
DeviceMemory QueryGpuMemory(int dev_id);

}  // namespace tessera::storage
