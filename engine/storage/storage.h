// Storage: the process-wide allocator of device memory, one pool per device
// (memory_pool.h). NDArray chunks, temp space and executor plans all
// allocate here, so the statistics cover everything tessera holds.
//
//   Handle h = Storage::Get()->Alloc(bytes, Context::GPU(0));
//   ...  // only the engine's ordering keeps later users off a freed block:
//   Storage::Get()->Free(h);  // free once every op that touches h has finished
//
// The TESSERA_* pooling knobs (pool_options.h) are read once, at first use.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <mutex>
#include <vector>

#include "engine/base/context.h"
#include "engine/storage/pool_options.h"
#include "engine/storage/storage_types.h"

namespace tessera::storage {

class MemoryPool;

class Storage {
 public:
  // Never destroyed: ops, thread exits and other singletons free memory until
  // the very end of the process.
  static Storage* Get();

  // CPU and pinned blocks are 64-byte aligned, GPU blocks 256-byte aligned.
  // bytes == 0 gives a null dptr. Throws tessera::Error for an unusable
  // context ("gpu(1) is not available: 1 GPU"), an absurd size, or a device
  // out of memory ("out of memory allocating 1.5 GiB on cpu(0) ...").
  Handle Alloc(size_t bytes, Context ctx);
  // Returns the block to its device's pool. A null dptr is a no-op; a handle
  // Storage did not hand out, or freed twice, is an Error.
  void Free(Handle handle);
  // Returns the block to the system at once, bypassing the pool.
  void DirectFree(Handle handle);
  // Returns ctx's pooled blocks (or every device's) to the system.
  void ReleaseAll(Context ctx);
  void ReleaseAll();
  // All zero for a device never used.
  StorageStats Stats(Context ctx) const;
  // Makes ctx's peak_bytes_in_use its current bytes_in_use, to measure the
  // peak of what comes next.
  void ResetPeak(Context ctx);
  // The devices Storage has allocated on, cpu first, then gpu, then pinned.
  std::vector<Context> Devices() const;
  // Free and total memory of gpu(dev_id) as the driver reports them (memory
  // other processes hold counts as used). The errors of Alloc for a GPU this
  // build or machine cannot use.
  static DeviceMemory GpuMemory(int dev_id);

  // Largest device id per device type that Storage serves.
  static constexpr int kMaxDeviceIds = 64;

 private:
  Storage();
  // ctx's pool, or null before its first allocation.
  MemoryPool* Find(Context ctx) const;
  // ctx's pool, created (after checking ctx is usable) on first use.
  MemoryPool* FindOrCreate(Context ctx);
  static int Slot(Context ctx);

  PoolOptions host_options_, gpu_options_;
  std::mutex create_mu_;
  // Slots by (device type, id); filled once, then read without the lock.
  std::array<std::atomic<MemoryPool*>, 3 * kMaxDeviceIds> pools_{};
};

}  // namespace tessera::storage
