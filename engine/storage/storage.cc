#include "engine/storage/storage.h"

#include <memory>

#include "engine/base/error.h"
#include "engine/storage/cpu_allocator.h"
#include "engine/storage/cuda_allocators.h"
#include "engine/storage/memory_pool.h"

namespace tessera::storage {
namespace {

std::unique_ptr<RawAllocator> NewRawAllocator(Context ctx) {
#ifdef TESSERA_WITH_CUDA
  if (ctx.dev_type == DeviceType::kGPU) return NewGpuAllocator(ctx.dev_id);
  // Pinning needs a driver and a device; without one, plain memory does the
  // same job more slowly (as in MXNet).
  if (ctx.dev_type == DeviceType::kCPUPinned && NumGPUs() > 0) {
    return NewPinnedAllocator(ctx.dev_id);
  }
#else
  (void)ctx;
#endif
  return std::make_unique<CpuAllocator>();
}

void CheckContext(Context ctx) {
  TS_CHECK(ctx.dev_id >= 0 && ctx.dev_id < Storage::kMaxDeviceIds)
      << "invalid device " << ctx.ToString() << ": ids run from 0 to "
      << Storage::kMaxDeviceIds - 1;
  if (ctx.dev_type == DeviceType::kGPU) {
    TS_CHECK(BuiltWithCUDA()) << ctx.ToString() << ": this build has no CUDA";
    const int n = NumGPUs();
    TS_CHECK(ctx.dev_id < n) << ctx.ToString() << " is not available: " << n
                             << (n == 1 ? " GPU" : " GPUs");
  }
}

}  // namespace

Storage* Storage::Get() {
  static Storage* const instance = new Storage();
  return instance;
}

Storage::Storage()
    : host_options_(PoolOptionsFromEnv(/*gpu=*/false)),
      gpu_options_(PoolOptionsFromEnv(/*gpu=*/true)) {}

int Storage::Slot(Context ctx) {
  const int type = ctx.dev_type == DeviceType::kCPU ? 0 : ctx.dev_type == DeviceType::kGPU ? 1 : 2;
  return type * kMaxDeviceIds + ctx.dev_id;
}

MemoryPool* Storage::Find(Context ctx) const {
  if (ctx.dev_id < 0 || ctx.dev_id >= kMaxDeviceIds) return nullptr;
  return pools_[Slot(ctx)].load(std::memory_order_acquire);
}

MemoryPool* Storage::FindOrCreate(Context ctx) {
  if (MemoryPool* pool = Find(ctx)) return pool;
  CheckContext(ctx);
  std::atomic<MemoryPool*>& slot = pools_[Slot(ctx)];
  std::lock_guard<std::mutex> lock(create_mu_);
  MemoryPool* pool = slot.load(std::memory_order_relaxed);
  if (!pool) {
    pool = new MemoryPool(ctx, NewRawAllocator(ctx), ctx.is_gpu() ? gpu_options_ : host_options_);
    slot.store(pool, std::memory_order_release);
  }
  return pool;
}

Handle Storage::Alloc(size_t bytes, Context ctx) {
  MemoryPool* pool = FindOrCreate(ctx);
  if (bytes == 0) return Handle{nullptr, 0, ctx};
  return Handle{pool->Alloc(bytes), bytes, ctx};
}

void Storage::Free(Handle handle) {
  if (!handle.dptr) return;
  MemoryPool* pool = Find(handle.ctx);
  TS_CHECK(pool) << "Free of " << handle.dptr << " on " << handle.ctx.ToString()
                 << ": Storage never allocated on that device";
  pool->Free(handle.dptr, handle.size);
}

void Storage::DirectFree(Handle handle) {
  if (!handle.dptr) return;
  MemoryPool* pool = Find(handle.ctx);
  TS_CHECK(pool) << "DirectFree of " << handle.dptr << " on " << handle.ctx.ToString()
                 << ": Storage never allocated on that device";
  pool->DirectFree(handle.dptr, handle.size);
}

void Storage::ReleaseAll(Context ctx) {
  if (MemoryPool* pool = Find(ctx)) pool->ReleaseAll();
}

void Storage::ReleaseAll() {
  for (auto& slot : pools_) {
    if (MemoryPool* pool = slot.load(std::memory_order_acquire)) pool->ReleaseAll();
  }
}

StorageStats Storage::Stats(Context ctx) const {
  MemoryPool* pool = Find(ctx);
  return pool ? pool->Stats() : StorageStats{};
}

void Storage::ResetPeak(Context ctx) {
  if (MemoryPool* pool = Find(ctx)) pool->ResetPeak();
}

std::vector<Context> Storage::Devices() const {
  std::vector<Context> devices;
  for (DeviceType type : {DeviceType::kCPU, DeviceType::kGPU, DeviceType::kCPUPinned}) {
    for (int id = 0; id < kMaxDeviceIds; ++id) {
      if (Find(Context{type, id})) devices.push_back(Context{type, id});
    }
  }
  return devices;
}

DeviceMemory Storage::GpuMemory(int dev_id) {
  CheckContext(Context::GPU(dev_id));  // throws without CUDA or without that GPU
#ifdef TESSERA_WITH_CUDA
  return QueryGpuMemory(dev_id);
#else
  TS_THROW << "gpu(" << dev_id << "): this build has no CUDA";
#endif
}

}  // namespace tessera::storage
