// PushGroup (engine/scheduler/push_group.h): the ops one thread pushed while
// a group was open, waited for without waiting for anything else, and their
// first failure.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <new>
#include <thread>

#include "engine/base/error.h"
#include "engine/scheduler/engine.h"
#include "engine/scheduler/push_group.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using namespace tessera::engine;
using namespace std::chrono_literals;
using tessera::test::Contains;
using tessera::test::ErrorOf;

namespace {

const Context kCPU = Context::CPU();

bool WaitDone(const PushGroup& g) {
  auto end = std::chrono::steady_clock::now() + 10s;
  while (!g.done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

}  // namespace

TEST_CASE("a group waits for its own ops, not for work pushed before or elsewhere") {
  EngineOptions opts;
  opts.cpu_workers = 2;
  auto e = CreateEngine(EngineType::kThreaded, opts);
  VarHandle slow = e->NewVariable(), mine = e->NewVariable();
  std::atomic<bool> release{false};
  // Outstanding before the group: runs until released.
  e->PushSync(
      [&](RunContext) {
        while (!release.load()) std::this_thread::sleep_for(1ms);
      },
      kCPU, {}, {slow});
  std::atomic<bool> ran{false};
  std::atomic<int> wakeups{0};
  PushGroup g;
  e->PushSync([&](RunContext) { ran = true; }, kCPU, {}, {mine});
  g.Close();
  e->PushSync(
      [&](RunContext) {
        while (!release.load()) std::this_thread::sleep_for(1ms);
      },
      kCPU, {}, {slow});  // after Close: not the group's
  g.SetOnDone([&] { ++wakeups; });
  REQUIRE(WaitDone(g));
  CHECK(ran.load());
  CHECK(e->Stats().pending >= 1);  // the other work still runs
  CHECK(ErrorOf([&] { g.RethrowError(); }).empty());
  release = true;
  e->WaitForAll();
  e->DeleteVariable({}, kCPU, slow);
  e->DeleteVariable({}, kCPU, mine);
  e->WaitForAll();
}

TEST_CASE("a group reports its first failure, once, including skipped readers") {
  for (EngineType type : {EngineType::kThreaded, EngineType::kNaive}) {
    CAPTURE(type == EngineType::kThreaded);
    auto e = CreateEngine(type);
    VarHandle a = e->NewVariable(), b = e->NewVariable();
    {
      PushGroup g;
      e->PushSync([](RunContext) { throw Error("broken kernel"); }, kCPU, {}, {a},
                  FnProperty::kNormal, 0, "bad_op");
      e->PushSync([](RunContext) {}, kCPU, {a}, {b}, FnProperty::kNormal, 0, "reader");
      g.Close();
      REQUIRE(WaitDone(g));
      const std::string err = ErrorOf([&] { g.RethrowError(); });
      CHECK(Contains(err, "bad_op"));
      CHECK(Contains(err, "broken kernel"));
    }
    // Reported by the group: WaitForAll does not raise it a second time.
    CHECK(ErrorOf([&] { e->WaitForAll(); }).empty());
    e->DeleteVariable({}, kCPU, a);
    e->DeleteVariable({}, kCPU, b);
    e->WaitForAll();
  }
}

TEST_CASE("groups nest; a group destroyed with ops in flight is safe") {
  auto e = CreateEngine(EngineType::kThreaded);
  VarHandle v = e->NewVariable();
  std::atomic<bool> release{false};
  {
    PushGroup outer;
    {
      PushGroup inner;
      e->PushSync(
          [&](RunContext) {
            while (!release.load()) std::this_thread::sleep_for(1ms);
          },
          kCPU, {}, {v});
    }                     // destroyed while its op runs
    CHECK(outer.done());  // the inner group's op is not the outer's
    e->PushSync([](RunContext) {}, kCPU, {}, {v});
    outer.Close();
    CHECK(!outer.done());  // queued behind the running op
    release = true;
    REQUIRE(WaitDone(outer));
  }
  e->DeleteVariable({}, kCPU, v);
  e->WaitForAll();
}

TEST_CASE("an op that runs out of host memory fails with a clear error naming it") {
  auto e = CreateEngine(EngineType::kThreaded);
  VarHandle v = e->NewVariable();
  PushGroup g;
  e->PushSync([](RunContext) { throw std::bad_alloc(); }, kCPU, {}, {v}, FnProperty::kNormal, 0,
              "greedy_op");
  g.Close();
  REQUIRE(WaitDone(g));
  CHECK(ErrorOf([&] { g.RethrowError(); }) ==
        "engine op 'greedy_op' failed: out of memory: a host allocation failed");
  e->DeleteVariable({}, kCPU, v);
  e->WaitForAll();
}
