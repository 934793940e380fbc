// Pools for the objects made on every push (op blocks, queue entries), so the
// push path does not call malloc. Each thread keeps a small cache; caches
// trade whole batches with a global store, because objects are typically made
// on the pushing thread and freed on a worker, and per-thread lists alone
// would grow on one side and starve on the other.
//
// The global store keeps free objects by slab (64 KiB of memory, carved into
// objects) and refills caches from the lowest-addressed slab that has any.
// After a burst has spread the objects in flight over many slabs, a steady
// stream of pushes thus settles back onto the first few: a plain stack of
// batches would keep cycling through whatever mix of slabs the burst left on
// top, and ops on a hundred scattered pages run measurably slower than ops on
// a few contiguous ones. Slabs are kept for the next burst: handing them
// back to the system as they empty made every burst fault its memory in
// again. ReleaseObjectPools() gives back the wholly free ones on request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace tessera::engine {

struct ObjectPoolStats {
  size_t slabs = 0;        // slabs held, in use or free
  size_t global_free = 0;  // free objects in the global store (not in caches)
};

// Every ObjectPool in the process, together.
struct ObjectPoolsMemory {
  size_t bytes_held = 0;      // in all slabs
  size_t bytes_released = 0;  // by this call (ReleaseObjectPools)
};
ObjectPoolsMemory ObjectPoolsHeld();
// Returns to the system every slab whose objects are all free in a global
// store (objects in threads' caches keep their slab). Safe at any time.
ObjectPoolsMemory ReleaseObjectPools();

namespace detail {
struct ObjectPoolHooks {
  size_t (*bytes_held)();
  size_t (*release)();  // returns the bytes released
};
void RegisterObjectPool(ObjectPoolHooks hooks);
}  // namespace detail

template <typename T>
class ObjectPool {
 public:
  template <typename... Args>
  static T* New(Args&&... args) {
    return new (Local().Take()) T(std::forward<Args>(args)...);
  }
  static void Delete(T* obj) {
    obj->~T();
    Local().Give(obj);
  }
  // Raw storage for one T, for allocators (PoolAllocator).
  static void* Allocate() { return Local().Take(); }
  static void Deallocate(void* p) { Local().Give(p); }

  // Gives the calling thread's cache back to the global store (tests).
  static void FlushThreadCache() { Local().Flush(); }
  static ObjectPoolStats Stats() {
    std::lock_guard<std::mutex> lock(global().mu);
    return {global().slabs, global().num_free};
  }
  // Gives back the slabs whose objects are all in the global store; returns
  // how many.
  static size_t ReleaseFreeSlabs() {
    std::lock_guard<std::mutex> lock(global().mu);
    return global().ReleaseWhollyFree();
  }

  static constexpr size_t kBatch = 128;
  static constexpr size_t kSlabBytes = size_t(64) << 10;

 private:
  union Slot {
    Slot* next;
    alignas(T) unsigned char storage[sizeof(T)];
  };
  static constexpr size_t kPerSlab = kSlabBytes / sizeof(Slot);
  static_assert(kPerSlab >= kBatch, "ObjectPool is for small objects");

  struct Global {
    std::mutex mu;
    // Free objects of each slab that has any, keyed by the slab's address.
    std::map<uintptr_t, std::vector<Slot*>> free_by_slab;
    size_t slabs = 0;
    size_t num_free = 0;

    void Put(Slot* const* slots, size_t n) {
      auto it = free_by_slab.end();
      for (size_t i = 0; i < n; ++i) {
        uintptr_t base = reinterpret_cast<uintptr_t>(slots[i]) & ~(kSlabBytes - 1);
        if (it == free_by_slab.end() || it->first != base) {  // runs of one slab are common
          it = free_by_slab.try_emplace(base).first;
          if (it->second.capacity() == 0) it->second.reserve(kBatch);
        }
        it->second.push_back(slots[i]);
      }
      num_free += n;
    }
    // Up to kBatch objects from the lowest slabs; none when the store is empty.
    void Take(std::vector<Slot*>& out) {
      size_t want = kBatch;
      while (want > 0 && !free_by_slab.empty()) {
        auto it = free_by_slab.begin();
        std::vector<Slot*>& slab = it->second;
        size_t n = std::min(want, slab.size());
        out.insert(out.end(), slab.end() - n, slab.end());
        slab.resize(slab.size() - n);
        num_free -= n;
        want -= n;
        if (slab.empty()) free_by_slab.erase(it);
      }
    }
    size_t ReleaseWhollyFree() {
      size_t released = 0;
      for (auto it = free_by_slab.begin(); it != free_by_slab.end();) {
        if (it->second.size() < kPerSlab) {
          ++it;
          continue;
        }
        ::operator delete(reinterpret_cast<void*>(it->first), std::align_val_t(kSlabBytes));
        num_free -= kPerSlab;
        it = free_by_slab.erase(it);
        ++released;
      }
      slabs -= released;
      return released;
    }
  };
  // Never destroyed: thread caches flush into it at thread exit, which may
  // come after static destructors.
  static Global& global() {
    static Global* g = [] {
      auto* made = new Global();
      detail::RegisterObjectPool({[] { return Stats().slabs * kSlabBytes; },
                                  [] { return ReleaseFreeSlabs() * kSlabBytes; }});
      return made;
    }();
    return *g;
  }

  struct Cache {
    std::vector<Slot*> free;
    Cache() { free.reserve(2 * kBatch); }
    ~Cache() { Flush(); }
    void Flush() {
      if (free.empty()) return;
      std::lock_guard<std::mutex> lock(global().mu);
      global().Put(free.data(), free.size());
      free.clear();
    }
    void* Take() {
      if (free.empty()) Refill();
      Slot* s = free.back();
      free.pop_back();
      return s;
    }
    void Give(void* p) {
      free.push_back(static_cast<Slot*>(p));
      if (free.size() >= 2 * kBatch) {  // hand one batch back
        std::lock_guard<std::mutex> lock(global().mu);
        global().Put(free.data() + free.size() - kBatch, kBatch);
        free.resize(free.size() - kBatch);
      }
    }
    void Refill() {
      {
        std::lock_guard<std::mutex> lock(global().mu);
        global().Take(free);
        if (!free.empty()) return;
        ++global().slabs;
      }
      Slot* slab = static_cast<Slot*>(::operator new(kSlabBytes, std::align_val_t(kSlabBytes)));
      // Handed out from the slab's start.
      for (size_t i = kPerSlab; i-- > 0;) free.push_back(slab + i);
    }
  };
  static Cache& Local() {
    thread_local Cache cache;
    return cache;
  }
};

// A standard allocator of single objects from ObjectPool, for
// std::allocate_shared of objects made and dropped at a high rate (an
// NDArray's chunk): its control block and object then come from the pool.
template <typename T>
struct PoolAllocator {
  using value_type = T;
  PoolAllocator() = default;
  template <typename U>
  PoolAllocator(const PoolAllocator<U>&) {}
  T* allocate(size_t n) {
    if (n != 1) return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(alignof(T))));
    return static_cast<T*>(ObjectPool<T>::Allocate());
  }
  void deallocate(T* p, size_t n) {
    if (n != 1) return ::operator delete(p, std::align_val_t(alignof(T)));
    ObjectPool<T>::Deallocate(p);
  }
  template <typename U>
  bool operator==(const PoolAllocator<U>&) const {
    return true;
  }
};

}  // namespace tessera::engine
