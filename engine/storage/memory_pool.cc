#include "engine/storage/memory_pool.h"

#include <algorithm>
#include <utility>

#include "engine/base/error.h"
#include "engine/storage/format_bytes.h"

namespace tessera::storage {

MemoryPool::MemoryPool(Context ctx, std::unique_ptr<RawAllocator> raw, PoolOptions options)
    : ctx_(ctx), raw_(std::move(raw)), options_(options) {}

MemoryPool::~MemoryPool() {
  ReleaseAll();
}

void* MemoryPool::Alloc(size_t bytes) {
  TS_CHECK(bytes > 0);
  TS_CHECK(bytes <= kMaxAllocBytes)
      << "cannot allocate " << FormatBytes(bytes) << " (" << bytes << " bytes) on "
      << ctx_.ToString() << ": more than the " << FormatBytes(kMaxAllocBytes)
      << " any single block may hold; is the shape right?";
  if (!options_.pooling) return AllocFromSystem(RoundUpTo(bytes, kAlignment), bytes);

  const int bucket = BucketIndex(bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& list = free_[bucket];
    if (!list.empty()) {
      LiveMap::node_type node = std::move(list.back());
      list.pop_back();
      node.mapped().requested = bytes;
      const size_t reserved = node.mapped().reserved;
      void* ptr = node.key();
      live_.insert(std::move(node));
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
  std::lock_guard<std::mutex> lock(mu_);
  try {
    live_.emplace(ptr, Block{requested, reserved});
  } catch (...) {
    raw_->Deallocate(ptr, reserved);
    throw;
  }
  stats_.bytes_in_use += reserved;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  ++stats_.num_allocs;
  return ptr;
}

MemoryPool::LiveMap::node_type MemoryPool::TakeLive(void* ptr, size_t bytes, const char* what) {
  auto it = live_.find(ptr);
  TS_CHECK(it != live_.end()) << what << " of " << ptr << " on " << ctx_.ToString()
                              << ": no block allocated there starts at this address (freed "
                                 "twice, or allocated on another device?)";
  TS_CHECK(it->second.requested == bytes)
      << what << " of " << ptr << " on " << ctx_.ToString() << ": the handle says " << bytes
      << " bytes but the block was allocated with " << it->second.requested;
  stats_.bytes_in_use -= it->second.reserved;
  return live_.extract(it);
}

void MemoryPool::Free(void* ptr, size_t bytes) {
  LiveMap::node_type node;
  {
    std::lock_guard<std::mutex> lock(mu_);
    node = TakeLive(ptr, bytes, "Free");
    const size_t reserved = node.mapped().reserved;
    if (options_.pooling && stats_.bytes_pooled + reserved <= options_.max_pooled_bytes) {
      free_[BucketIndex(reserved)].push_back(std::move(node));
      stats_.bytes_pooled += reserved;
      return;
    }
  }
  raw_->Deallocate(ptr, node.mapped().reserved);
}

void MemoryPool::DirectFree(void* ptr, size_t bytes) {
  LiveMap::node_type node;
  {
    std::lock_guard<std::mutex> lock(mu_);
    node = TakeLive(ptr, bytes, "DirectFree");
  }
  raw_->Deallocate(ptr, node.mapped().reserved);
}

void MemoryPool::ReleaseAll() {
  std::array<std::vector<LiveMap::node_type>, kNumBuckets> taken;
  {
    std::lock_guard<std::mutex> lock(mu_);
    taken.swap(free_);
    stats_.bytes_pooled = 0;
  }
  for (auto& list : taken) {
    for (auto& node : list) raw_->Deallocate(node.key(), node.mapped().reserved);
  }
}

StorageStats MemoryPool::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace tessera::storage
