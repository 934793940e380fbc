#include "engine/op/deferred_init.h"

#include <mutex>

#include "engine/base/error.h"

// The section's bounds, which the linker defines when some object of the
// link has the section (weak: a binary without operator libraries has none,
// and both are then null).
extern "C" {
[[gnu::weak]] extern const tessera::op::DeferredInitFn __start_tessera_deferred_init[];
[[gnu::weak]] extern const tessera::op::DeferredInitFn __stop_tessera_deferred_init[];
}

namespace tessera::op {
namespace deferred_init_detail {

std::atomic<bool> g_done{false};

namespace {
std::mutex g_mu;                      // constant-initialised: usable from any initialiser
thread_local bool t_running = false;  // this thread is inside Run()
}  // namespace

// noexcept: a throwing static initialiser ends the process, as it did at
// start-up, instead of leaving the registry half made.
void Run() noexcept {
  if (t_running) return;  // an initialiser reached the registry: it sees what exists so far
  std::lock_guard lock(g_mu);
  if (g_done.load(std::memory_order_relaxed)) return;  // another thread ran them
  t_running = true;
  const tessera::op::DeferredInitFn* begin = __start_tessera_deferred_init;
  const tessera::op::DeferredInitFn* end = __stop_tessera_deferred_init;
  TS_DCHECK((begin == nullptr) == (end == nullptr) && begin <= end);
  for (const tessera::op::DeferredInitFn* f = begin; f != end; ++f) (*f)();
  t_running = false;
  g_done.store(true, std::memory_order_release);
}

}  // namespace deferred_init_detail

long DeferredInitCount() {
  return static_cast<long>(__stop_tessera_deferred_init - __start_tessera_deferred_init);
}

bool DeferredInitDone() {
  return deferred_init_detail::g_done.load(std::memory_order_acquire);
}

}  // namespace tessera::op
