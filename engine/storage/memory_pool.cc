#include "engine/storage/memory_pool.h"

#include <algorithm>
#include <utility>

#include "engine/base/error.h"
#include "engine/base/format_bytes.h"
#include "engine/base/memory_events.h"

namespace tessera::storage {

MemoryPool::MemoryPool(Context ctx, std::unique_ptr<RawAllocator> raw, PoolOptions options)
    : ctx_(ctx), raw_(std::move(raw)), options_(options) {}

MemoryPool::~MemoryPool() {
  ReleaseAll();
}

// The profiler's memory counters (engine/base/memory_events.h), after the
// change: only while it listens.
void MemoryPool::ReportToListener() const {
  const StorageStats s = Stats();
  ReportMemory(ctx_, s.bytes_in_use, s.bytes_pooled);
}

void* MemoryPool::Alloc(size_t bytes) {
  void* p = AllocBlock(bytes);
  if (MemoryListened()) [[unlikely]]
    ReportToListener();
  return p;
}

void* MemoryPool::AllocBlock(size_t bytes) {
  TS_CHECK(bytes > 0);
  TS_CHECK(bytes <= kMaxAllocBytes)
      << "cannot allocate " << FormatBytes(bytes) << " (" << bytes << " bytes) on "
      << ctx_.ToString() << ": more than the " << FormatBytes(kMaxAllocBytes)
      << " any single block may hold; is the shape right?";
  if (!options_.pooling) return AllocFromSystem(RoundUpTo(bytes, kAlignment), bytes);

  const int bucket = BucketIndex(bytes);
  {
    std::lock_guard<SpinLock> lock(mu_);
    auto& list = free_[bucket];
    if (!list.empty()) {
      void* ptr = list.back();
      const size_t reserved = BucketBytes(bucket);
      live_.Insert(ptr, {bytes, reserved});
      list.pop_back();
      stats_.bytes_pooled -= reserved;
      stats_.bytes_in_use += reserved;
      stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
      ++stats_.num_pool_hits;
      return ptr;
    }
  }
  return AllocFromSystem(BucketBytes(bucket), bytes);
}

void* MemoryPool::AllocFromSystem(size_t reserved, size_t requested) {
  void* ptr = raw_->Allocate(reserved);
  if (!ptr) {
    // Cached blocks of other sizes may be what fills the device (or fragments it).
    ReleaseAll();
    ptr = raw_->Allocate(reserved);
  }
  if (!ptr) {
    const std::string info = raw_->MemoryInfo();
    TS_THROW << "out of memory allocating " << FormatBytes(requested) << " on " << ctx_.ToString()
             << " (" << (info.empty() ? "" : info + "; ") << "tessera holds "
             << FormatBytes(Stats().bytes_in_use) << " in use there)";
  }
  std::lock_guard<SpinLock> lock(mu_);
  try {
    live_.Insert(ptr, {requested, reserved});
  } catch (...) {
    raw_->Deallocate(ptr, reserved);
    throw;
  }
  stats_.bytes_in_use += reserved;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  ++stats_.num_allocs;
  return ptr;
}

LiveTable::Block* MemoryPool::FindLive(void* ptr, size_t bytes, const char* what) {
  LiveTable::Block* b = live_.Find(ptr);
  TS_CHECK(b) << what << " of " << ptr << " on " << ctx_.ToString()
              << ": no block allocated there starts at this address (freed twice, or allocated "
                 "on another device?)";
  TS_CHECK(b->requested == bytes) << what << " of " << ptr << " on " << ctx_.ToString()
                                  << ": the handle says " << bytes
                                  << " bytes but the block was allocated with " << b->requested;
  return b;
}

void MemoryPool::Free(void* ptr, size_t bytes) {
  FreeBlock(ptr, bytes);
  if (MemoryListened()) [[unlikely]]
    ReportToListener();
}

void MemoryPool::FreeBlock(void* ptr, size_t bytes) {
  size_t reserved;
  {
    std::lock_guard<SpinLock> lock(mu_);
    LiveTable::Block* b = FindLive(ptr, bytes, "Free");
    reserved = b->reserved;
    const bool pool =
        options_.pooling && stats_.bytes_pooled + reserved <= options_.max_pooled_bytes;
    if (pool) free_[BucketIndex(reserved)].push_back(ptr);  // first: it may throw
    live_.Erase(b);
    stats_.bytes_in_use -= reserved;
    if (pool) {
      stats_.bytes_pooled += reserved;
      return;
    }
  }
  raw_->Deallocate(ptr, reserved);
}

void MemoryPool::DirectFree(void* ptr, size_t bytes) {
  size_t reserved;
  {
    std::lock_guard<SpinLock> lock(mu_);
    LiveTable::Block* b = FindLive(ptr, bytes, "DirectFree");
    reserved = b->reserved;
    live_.Erase(b);
    stats_.bytes_in_use -= reserved;
  }
  raw_->Deallocate(ptr, reserved);
  if (MemoryListened()) [[unlikely]]
    ReportToListener();
}

void MemoryPool::ReleaseAll() {
  std::array<std::vector<void*>, kNumBuckets> taken;
  {
    std::lock_guard<SpinLock> lock(mu_);
    taken.swap(free_);
    stats_.bytes_pooled = 0;
  }
  for (int b = 0; b < kNumBuckets; ++b)
    for (void* ptr : taken[b]) raw_->Deallocate(ptr, BucketBytes(b));
}

StorageStats MemoryPool::Stats() const {
  std::lock_guard<SpinLock> lock(mu_);
  return stats_;
}

void MemoryPool::ResetPeak() {
  std::lock_guard<SpinLock> lock(mu_);
  stats_.peak_bytes_in_use = stats_.bytes_in_use;
}

}  // namespace tessera::storage
