// Pools for the objects made on every push (op blocks, queue entries), so the
// push path does not call malloc. Each thread keeps a small cache; caches
// trade whole batches with a global list, because objects are typically made
// on the pushing thread and freed on a worker, and per-thread lists alone
// would grow on one side and starve on the other.
#pragma once

#include <cstddef>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace tessera::engine {

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

 private:
  static constexpr size_t kBatch = 128;
  static constexpr size_t kChunk = 256;  // objects per system allocation
  union Slot {
    Slot* next;
    alignas(T) unsigned char storage[sizeof(T)];
  };

  struct Global {
    std::mutex mu;
    std::vector<std::vector<Slot*>> batches;  // full batches of kBatch free slots
  };
  // Never destroyed: thread caches flush into it at thread exit, which may
  // come after static destructors.
  static Global& global() {
    static Global* g = new Global();
    return *g;
  }

  struct Cache {
    std::vector<Slot*> free;
    Cache() { free.reserve(2 * kBatch); }
    ~Cache() {
      if (free.empty()) return;
      std::lock_guard<std::mutex> lock(global().mu);
      global().batches.push_back(std::move(free));
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
        std::vector<Slot*> batch(free.end() - kBatch, free.end());
        free.resize(free.size() - kBatch);
        std::lock_guard<std::mutex> lock(global().mu);
        global().batches.push_back(std::move(batch));
      }
    }
    void Refill() {
      {
        std::lock_guard<std::mutex> lock(global().mu);
        if (!global().batches.empty()) {
          std::vector<Slot*>& b = global().batches.back();
          free.insert(free.end(), b.begin(), b.end());
          global().batches.pop_back();
          return;
        }
      }
      Slot* chunk = static_cast<Slot*>(
          ::operator new(sizeof(Slot) * kChunk, std::align_val_t(alignof(Slot))));
      for (size_t i = 0; i < kChunk; ++i) free.push_back(chunk + i);
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
