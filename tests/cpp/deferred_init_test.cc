// The operator libraries' static initialisers run on the registry's first
// use, not at start-up (engine/op/deferred_init.h). This binary's only test
// case must see the registry untouched when it starts: keep it alone here.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "engine/legacy_op/simple_op.h"
#include "engine/op/deferred_init.h"
#include "engine/op/op.h"

using namespace tessera;

TEST_CASE("the registrations wait for the registry's first use, which threads race to make") {
  // The build moved the operator libraries' initialisers out of .init_array:
  // without that (a compile that skipped tools/build/defer_static_init.sh)
  // this section would hold only the engine's own TS_RUN_ON_REGISTRY_USE
  // functions, and they would have run at start-up through a registration.
  CHECK(op::DeferredInitCount() > 50);
  // Nothing at start-up (the runtime's, this binary's) looked up an operator.
  REQUIRE_FALSE(op::DeferredInitDone());

  // Threads that reach the registry at once all see it whole: one runs the
  // initialisers, the others wait for it.
  constexpr int kThreads = 4;
  std::atomic<int> ready{0};
  std::vector<size_t> counts(kThreads);
  std::vector<const op::Op*> found(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      if (t % 2 == 0)
        counts[t] = op::Op::ListAll().size();
      else
        found[t] = op::Op::Find("Convolution");
    });
  }
  for (std::thread& th : threads) th.join();
  CHECK(op::DeferredInitDone());
  const size_t all = op::Op::ListAll().size();
  CHECK(all > 300);  // every operator of ops/, not a few
  for (int t = 0; t < kThreads; ++t) {
    if (t % 2 == 0)
      CHECK(counts[t] == all);
    else
      CHECK(found[t] == op::Op::Find("Convolution"));
  }
  CHECK(op::Op::Find("Convolution") != nullptr);
  // Registered by the engine's layers through TS_RUN_ON_REGISTRY_USE.
  CHECK(op::Op::Find("_foreach") != nullptr);
  CHECK(op::Op::Find("_CachedOp") != nullptr);
  // Registered by ops/ as a SimpleOp: its own registry waits for the same run.
  CHECK(op::SimpleOpRegEntry::Find("smooth_l1") != nullptr);
}
