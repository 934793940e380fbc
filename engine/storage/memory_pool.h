// A size-bucketed pool over one device's RawAllocator. Freed blocks go to the
// free list of their size class and serve later requests of that class, so
// steady-state training allocates nothing from the system (cudaMalloc and
// cudaFree synchronise the device; large host mallocs fault in fresh pages).
//
// Thread-safe: one spin lock guards the free lists, the table of live blocks
// and the statistics; it is held for a few loads and stores, never across a
// call to the system allocator.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/base/context.h"
#include "engine/base/spin_lock.h"
#include "engine/storage/bucket.h"
#include "engine/storage/live_table.h"
#include "engine/storage/pool_options.h"
#include "engine/storage/raw_allocator.h"
#include "engine/storage/storage_types.h"

namespace tessera::storage {

class MemoryPool {
 public:
  // `ctx` only names the device in messages.
  MemoryPool(Context ctx, std::unique_ptr<RawAllocator> raw, PoolOptions options);
  // Returns pooled blocks to the system. Blocks still in use are not touched.
  ~MemoryPool();
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  // bytes > 0. Throws tessera::Error naming the size and device when the
  // request is absurd or the device is out of memory even after this pool
  // released its cached blocks.
  void* Alloc(size_t bytes);
  // `bytes` must be the size passed to Alloc; a pointer this pool did not
  // hand out (or already took back) is an Error.
  void Free(void* ptr, size_t bytes);
  // As Free, but the block goes straight back to the system.
  void DirectFree(void* ptr, size_t bytes);
  // Returns every pooled block to the system.
  void ReleaseAll();
  StorageStats Stats() const;
  // Starts a new peak measurement: peak_bytes_in_use drops to bytes_in_use.
  void ResetPeak();
  const PoolOptions& options() const { return options_; }

 private:
  void* AllocBlock(size_t bytes);
  void FreeBlock(void* ptr, size_t bytes);
  void ReportToListener() const;
  void* AllocFromSystem(size_t reserved, size_t requested);
  // The live entry of ptr, checked against `bytes`; `what` names the call.
  LiveTable::Block* FindLive(void* ptr, size_t bytes, const char* what);

  const Context ctx_;
  const std::unique_ptr<RawAllocator> raw_;
  const PoolOptions options_;

  mutable SpinLock mu_;
  // Blocks handed out: reserved is the size class, or exact when not pooling.
  LiveTable live_;
  // Pooled blocks per size class (each holds BucketBytes of its class).
  std::array<std::vector<void*>, kNumBuckets> free_;
  StorageStats stats_;
};

}  // namespace tessera::storage
