#include "engine/scheduler/object_pool.h"

namespace tessera::engine {
namespace {

struct Registry {
  std::mutex mu;
  std::vector<detail::ObjectPoolHooks> pools;
};

// Never destroyed, like the pools it lists.
Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

// A copy, so the hooks run without the registry's lock: a hook may wait for
// its pool's first use on another thread, which may be registering.
std::vector<detail::ObjectPoolHooks> Pools() {
  std::lock_guard<std::mutex> lock(registry().mu);
  return registry().pools;
}

}  // namespace

void detail::RegisterObjectPool(ObjectPoolHooks hooks) {
  std::lock_guard<std::mutex> lock(registry().mu);
  registry().pools.push_back(hooks);
}

ObjectPoolsMemory ObjectPoolsHeld() {
  ObjectPoolsMemory m;
  for (const detail::ObjectPoolHooks& pool : Pools()) m.bytes_held += pool.bytes_held();
  return m;
}

ObjectPoolsMemory ReleaseObjectPools() {
  ObjectPoolsMemory m;
  for (const detail::ObjectPoolHooks& pool : Pools()) {
    m.bytes_released += pool.release();
    m.bytes_held += pool.bytes_held();
  }
  return m;
}

}  // namespace tessera::engine
