// The engine's object pool: distinct live objects, reuse across threads, and
// a steady stream settling back onto a few slabs after a burst.
#include "engine/scheduler/object_pool.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <thread>
#include <vector>

namespace {

using tessera::engine::ObjectPool;

// One type per test case: each type has its own pool.
template <int Tag>
struct Obj {
  explicit Obj(int v) : value(v) {}
  int value;
  char pad[252];
};

template <typename T>
uintptr_t SlabOf(const T* p) {
  return reinterpret_cast<uintptr_t>(p) & ~(ObjectPool<T>::kSlabBytes - 1);
}

// Frees `objs` on a thread of its own, whose cache goes back to the global
// store when the thread ends.
template <typename T>
void FreeOnAnotherThread(const std::vector<T*>& objs) {
  std::thread([&] {
    for (T* p : objs) ObjectPool<T>::Delete(p);
  }).join();
}

}  // namespace

TEST_CASE("live objects are distinct, aligned and constructed; freed ones are reused") {
  using O = Obj<0>;
  std::vector<O*> objs;
  for (int i = 0; i < 3000; ++i) objs.push_back(ObjectPool<O>::New(i));
  std::set<O*> distinct(objs.begin(), objs.end());
  CHECK(distinct.size() == objs.size());
  for (int i = 0; i < 3000; ++i) {
    CHECK(reinterpret_cast<uintptr_t>(objs[i]) % alignof(O) == 0);
    CHECK(objs[i]->value == i);
  }
  const size_t slabs = ObjectPool<O>::Stats().slabs;
  CHECK(slabs >= 3000 * sizeof(O) / ObjectPool<O>::kSlabBytes);
  for (int round = 0; round < 5; ++round) {
    for (O* p : objs) ObjectPool<O>::Delete(p);
    objs.clear();
    for (int i = 0; i < 3000; ++i) objs.push_back(ObjectPool<O>::New(i));
  }
  CHECK(ObjectPool<O>::Stats().slabs == slabs);  // no new memory for the same load
  for (O* p : objs) ObjectPool<O>::Delete(p);
}

TEST_CASE("objects made on one thread and freed on another are reused, not leaked") {
  using O = Obj<1>;
  size_t slabs_after_first = 0;
  for (int round = 0; round < 50; ++round) {
    std::vector<O*> objs;
    for (int i = 0; i < 1000; ++i) objs.push_back(ObjectPool<O>::New(i));
    FreeOnAnotherThread(objs);
    if (round == 0) slabs_after_first = ObjectPool<O>::Stats().slabs;
  }
  // A round needs about four slabs; the caches may hold a few more.
  CHECK(ObjectPool<O>::Stats().slabs <= slabs_after_first + 2);
}

TEST_CASE("after a burst freed in random order, a steady stream settles on the lowest slabs") {
  using O = Obj<2>;
  // A burst spread over about eighty slabs, freed in shuffled order (as a
  // burst of ops from two pushing threads completes): every batch given back
  // mixes objects from many slabs.
  std::vector<O*> burst;
  for (int i = 0; i < 20000; ++i) burst.push_back(ObjectPool<O>::New(i));
  std::shuffle(burst.begin(), burst.end(), std::mt19937(7));
  FreeOnAnotherThread(burst);
  ObjectPool<O>::FlushThreadCache();
  const size_t slabs = ObjectPool<O>::Stats().slabs;
  REQUIRE(slabs >= 70);
  CHECK(ObjectPool<O>::Stats().global_free == slabs * (ObjectPool<O>::kSlabBytes / sizeof(O)));

  // Then a steady stream: 300 objects made here, freed by another thread.
  std::set<uintptr_t> used_slabs;
  for (int round = 0; round < 20; ++round) {
    std::vector<O*> objs;
    for (int i = 0; i < 300; ++i) objs.push_back(ObjectPool<O>::New(i));
    if (round == 19)
      for (O* p : objs) used_slabs.insert(SlabOf(p));
    FreeOnAnotherThread(objs);
  }
  // 300 objects of 256 bytes fill two slabs; a stack of batches would keep
  // handing out the burst's mixture from dozens.
  CHECK(used_slabs.size() <= 3);
  CHECK(ObjectPool<O>::Stats().slabs == slabs);  // the stream needed no new memory
}

TEST_CASE("releasing gives back wholly free slabs and keeps any slab with a live object") {
  using O = Obj<3>;
  using tessera::engine::ObjectPoolsHeld;
  using tessera::engine::ReleaseObjectPools;
  constexpr size_t kPerSlab = ObjectPool<O>::kSlabBytes / sizeof(O);
  std::vector<O*> objs;
  for (int i = 0; i < 4000; ++i) objs.push_back(ObjectPool<O>::New(i));
  const size_t slabs = ObjectPool<O>::Stats().slabs;
  REQUIRE(slabs >= 4000 / kPerSlab);
  CHECK(ObjectPoolsHeld().bytes_held >= slabs * ObjectPool<O>::kSlabBytes);

  // Keep every 1000th object; free the rest, flushing every cache into the
  // global store.
  std::vector<O*> kept, freed;
  for (size_t i = 0; i < objs.size(); ++i) (i % 1000 == 0 ? kept : freed).push_back(objs[i]);
  FreeOnAnotherThread(freed);
  ObjectPool<O>::FlushThreadCache();
  std::set<uintptr_t> live_slabs;
  for (O* p : kept) live_slabs.insert(SlabOf(p));

  const auto released = ReleaseObjectPools();
  CHECK(ObjectPool<O>::Stats().slabs == live_slabs.size());
  CHECK(released.bytes_released >= (slabs - live_slabs.size()) * ObjectPool<O>::kSlabBytes);
  CHECK(ObjectPool<O>::Stats().global_free == live_slabs.size() * kPerSlab - kept.size());
  for (size_t i = 0; i < kept.size(); ++i) CHECK(kept[i]->value == static_cast<int>(1000 * i));

  // The pool works on: new objects come from the kept slabs' free ones first.
  O* again = ObjectPool<O>::New(-1);
  CHECK(live_slabs.count(SlabOf(again)) == 1);
  ObjectPool<O>::Delete(again);
  FreeOnAnotherThread(kept);
  ObjectPool<O>::FlushThreadCache();
  ReleaseObjectPools();
  CHECK(ObjectPool<O>::Stats().slabs == 0);
  CHECK(ObjectPool<O>::Stats().global_free == 0);
}
