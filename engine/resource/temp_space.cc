#include "engine/resource/temp_space.h"

#include <atomic>
#include <cstdint>
#include <exception>
#include <vector>

#include "engine/base/logging.h"
#include "engine/base/thread_state.h"
#include "engine/storage/bucket.h"
#include "engine/storage/storage.h"

namespace tessera::resource {
namespace {

using storage::Handle;
using storage::kMaxAllocBytes;
using storage::RoundUpBucket;
using storage::Storage;

// Bumped by ReleaseAll; a buffer from an older generation is dropped at its
// next use.
std::atomic<uint64_t> g_generation{0};

struct Space {
  Context ctx;
  int depth;
  uint64_t generation;
  Handle handle;
};

// Returns a buffer to Storage. Device and pinned buffers may still be read
// by work queued on a stream, and a pooled block could be handed to another
// stream at once; DirectFree (cudaFree / cudaFreeHost) waits for the device
// first. CPU ops finish before returning, so their buffers can be pooled.
void Release(const Handle& handle) {
  if (handle.ctx.dev_type == DeviceType::kCPU) {
    Storage::Get()->Free(handle);
  } else {
    Storage::Get()->DirectFree(handle);
  }
}

class ThreadSpaces {
 public:
  ~ThreadSpaces() {
    for (Space& s : spaces_) {
      try {
        Release(s.handle);
      } catch (const std::exception& e) {
        TS_LOG(Warning) << "releasing temp space at thread exit: " << e.what();
      }
    }
  }

  void* Get(Context ctx, size_t bytes) {
    const int depth = OpDepth();
    const uint64_t generation = g_generation.load(std::memory_order_relaxed);
    Space* space = Find(ctx, depth);
    if (space && space->generation != generation) {
      Release(space->handle);
      space->handle = Handle{nullptr, 0, ctx};
      space->generation = generation;
    }
    if (bytes == 0) return nullptr;
    if (space && space->handle.size >= bytes) return space->handle.dptr;
    if (!space) {
      spaces_.push_back(Space{ctx, depth, generation, Handle{nullptr, 0, ctx}});
      space = &spaces_.back();
    }
    // The old buffer goes first so that, on a full GPU, its memory can serve
    // the new one (the pool releases cached blocks before giving up).
    Release(space->handle);
    space->handle = Handle{nullptr, 0, ctx};
    // Take the whole size class: the pool would round up anyway, and a
    // slightly larger request later then needs no new buffer.
    const size_t capacity = bytes <= kMaxAllocBytes ? RoundUpBucket(bytes) : bytes;
    space->handle = Storage::Get()->Alloc(capacity, ctx);
    return space->handle.dptr;
  }

 private:
  Space* Find(Context ctx, int depth) {
    for (Space& s : spaces_) {
      if (s.ctx == ctx && s.depth == depth) return &s;
    }
    return nullptr;
  }

  std::vector<Space> spaces_;  // few entries: devices times nesting depths
};

thread_local ThreadSpaces t_spaces;

}  // namespace

void* TempSpace::Get(Context ctx, size_t bytes) {
  return t_spaces.Get(ctx, bytes);
}

void TempSpace::ReleaseAll() {
  g_generation.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace tessera::resource
