// The operator libraries' static initialisers, run on the registry's first
// use instead of at start-up.
//
// Registering ~400 operators (their attribute tables, parameter fields and
// descriptions) was a third of `tessera -e ''`: heap pages and binary pages
// that a start-up which never looks up an operator does not need. The build
// compiles every object of ops/ through tools/build/defer_static_init.sh,
// which moves the object's .init_array entries into the section
// tessera_deferred_init; RunDeferredInit() runs them, once, in link order,
// and every entry to an operator registry (Op, SimpleOp) calls it first. An
// operator library's code is only reached through the registry (the layers
// above find ops by name), so nothing there runs before its initialisers.
// A static in ops/ that must be made at start-up anyway says so with
// TS_INIT_AT_START, which gives it an init priority: those entries live in
// .init_array.NNNNN, which the build leaves where it is.
#pragma once

#include <atomic>

namespace tessera::op {

using DeferredInitFn = void (*)();

namespace deferred_init_detail {
extern std::atomic<bool> g_done;
void Run() noexcept;
}  // namespace deferred_init_detail

// Runs the deferred static initialisers if they have not run. Safe from any
// thread (others wait for the first to finish); a call from inside one of
// them returns at once, and that initialiser sees the registry as it stands,
// as a static initialiser always did.
inline void RunDeferredInit() {
  if (!deferred_init_detail::g_done.load(std::memory_order_acquire)) deferred_init_detail::Run();
}

// How many deferred initialisers this binary holds, and whether they have
// run (for tests, and for tessera.internal's registry_loaded()).
long DeferredInitCount();
bool DeferredInitDone();

}  // namespace tessera::op

// On a namespace-scope object of class type in ops/: made at start-up, with
// the static initialisers that are not deferred.
#define TS_INIT_AT_START __attribute__((init_priority(65000)))

// At namespace scope outside ops/: runs `fn` (void()) on the registry's first
// use, with the deferred initialisers (before those of ops/, which link
// later). For the few operators the engine's own layers register (the
// control-flow ops in graph/, _CachedOp in autograd/): their TS_REGISTER_OP
// statements go inside `fn`. The pointer is constant-initialised, so nothing
// of it runs at start-up.
#define TS_RUN_ON_REGISTRY_USE(fn)                                                          \
  [[gnu::used, gnu::section("tessera_deferred_init")]] static ::tessera::op::DeferredInitFn \
  TS_DEFERRED_INIT_CONCAT(ts_deferred_init_, __COUNTER__) = (fn)
#define TS_DEFERRED_INIT_CONCAT_(a, b) a##b
#define TS_DEFERRED_INIT_CONCAT(a, b) TS_DEFERRED_INIT_CONCAT_(a, b)
