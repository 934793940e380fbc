// The engine's contract, case by case: ordering, parallel readers, errors and
// poison, waits under worker starvation, deletion, priorities, run-ahead
// bound, contexts, and switching engines.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "engine/base/error.h"
#include "engine/scheduler/engine.h"
#include "engine/scheduler/profiler.h"

#include "tests/cpp/test_util.h"

using namespace tessera;
using namespace tessera::test;
using namespace tessera::engine;
using namespace std::chrono_literals;

namespace {

const Context kCPU = Context::CPU();

std::unique_ptr<Engine> Threaded(int workers = 2) {
  EngineOptions opts;
  opts.cpu_workers = workers;
  return CreateEngine(EngineType::kThreaded, opts);
}

std::vector<std::unique_ptr<Engine>> BothEngines() {
  std::vector<std::unique_ptr<Engine>> v;
  v.push_back(Threaded());
  v.push_back(CreateEngine(EngineType::kNaive));
  return v;
}

const char* Name(Engine* e) {
  return e->type() == EngineType::kThreaded ? "threaded" : "naive";
}

// Spins until `flag` or a generous deadline; false on timeout.
bool WaitFlag(const std::atomic<bool>& flag, std::chrono::milliseconds limit = 5000ms) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (!flag.load()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace

TEST_CASE("writes run in push order; versions count writes only") {
  for (auto& eng : BothEngines()) {
    CAPTURE(Name(eng.get()));
    VarHandle v = eng->NewVariable();
    std::vector<int> order;
    for (int i = 0; i < 100; ++i)
      eng->PushSync([&order, i](RunContext) { order.push_back(i); }, kCPU, {}, {v});
    for (int i = 0; i < 50; ++i) eng->PushSync(nullptr, kCPU, {v}, {});  // reads
    eng->WaitForVar(v);
    eng->WaitForVar(v, WaitMode::kWrite);
    REQUIRE(order.size() == 100);
    for (int i = 0; i < 100; ++i) CHECK(order[i] == i);
    CHECK(Engine::VarVersion(v) == 100);
    eng->DeleteVariable(nullptr, kCPU, v);
    eng->WaitForAll();
  }
}

TEST_CASE("bursts of writes to one variable, each followed by a wait, run once and in order") {
  // A worker handed the newest write on a variable pauses for the pusher to
  // get ahead, looking at what queues behind that write meanwhile: waits,
  // reads and the final deletion arrive there while it looks.
  auto eng = Threaded(1);
  VarHandle v = eng->NewVariable();
  std::vector<int> order;
  int pushed = 0, read_sum = 0;
  for (int round = 0; round < 3000; ++round) {
    for (int i = 0; i <= round % 3; ++i, ++pushed)
      eng->PushSync([&order, pushed](RunContext) { order.push_back(pushed); }, kCPU, {}, {v});
    if (round % 4 == 0) eng->PushSync([&](RunContext) { read_sum += 1; }, kCPU, {v}, {});
    eng->WaitForVar(v, round % 2 ? WaitMode::kWrite : WaitMode::kRead);
  }
  int at_delete = -1;
  eng->DeleteVariable([&](RunContext) { at_delete = static_cast<int>(order.size()); }, kCPU, v);
  eng->WaitForAll();
  REQUIRE(order.size() == size_t(pushed));
  for (int i = 0; i < pushed; ++i) REQUIRE(order[i] == i);
  CHECK(read_sum == 750);
  CHECK(at_delete == pushed);
}

TEST_CASE("readers of one version run in parallel; a write waits for them") {
  auto eng = Threaded(2);
  VarHandle v = eng->NewVariable();
  std::atomic<int> arrived{0};
  std::atomic<bool> both_seen{false}, writer_ran_early{false}, readers_done{false};
  std::atomic<int> finished{0};
  for (int r = 0; r < 2; ++r) {
    eng->PushSync(
        [&](RunContext) {
          ++arrived;
          // Each reader waits for the other: serialised readers would time out.
          auto end = std::chrono::steady_clock::now() + 5s;
          while (arrived.load() < 2 && std::chrono::steady_clock::now() < end)
            std::this_thread::yield();
          if (arrived.load() == 2) both_seen = true;
          if (++finished == 2) readers_done = true;
        },
        kCPU, {v}, {});
  }
  eng->PushSync([&](RunContext) { writer_ran_early = !readers_done.load(); }, kCPU, {}, {v});
  eng->WaitForAll();
  CHECK(both_seen);
  CHECK_FALSE(writer_ran_early);
}

TEST_CASE("a variable named twice, or read and written, is written once") {
  for (auto& eng : BothEngines()) {
    CAPTURE(Name(eng.get()));
    VarHandle a = eng->NewVariable(), b = eng->NewVariable();
    int runs = 0;
    eng->PushSync([&](RunContext) { ++runs; }, kCPU, {a, a, b}, {a, b, b, a});
    eng->PushSync([&](RunContext) { ++runs; }, kCPU, {a, a}, {});
    eng->WaitForVar(a, WaitMode::kWrite);  // waits for the reader too
    eng->WaitForVar(b, WaitMode::kWrite);
    CHECK(runs == 2);
    CHECK(Engine::VarVersion(a) == 1);
    CHECK(Engine::VarVersion(b) == 1);
  }
}

TEST_CASE("async ops end when their callback is called from another thread") {
  for (auto& eng : BothEngines()) {
    CAPTURE(Name(eng.get()));
    VarHandle v = eng->NewVariable();
    std::atomic<int> value{0};
    std::vector<std::thread> helpers;
    eng->PushAsync(
        [&](RunContext, CallbackOnComplete done) {
          helpers.emplace_back([&value, done] {
            std::this_thread::sleep_for(20ms);
            value = 7;
            done();
          });
        },
        kCPU, {}, {v});
    int seen = -1;
    eng->PushSync([&](RunContext) { seen = value; }, kCPU, {v}, {});
    eng->WaitForAll();
    CHECK(seen == 7);
    for (auto& t : helpers) t.join();
  }
}

TEST_CASE("a failing op poisons its outputs until they are written again; readers pass it on") {
  for (auto& eng : BothEngines()) {
    CAPTURE(Name(eng.get()));
    VarHandle a = eng->NewVariable(), b = eng->NewVariable(), c = eng->NewVariable();
    bool reader_ran = false;
    eng->PushSync([](RunContext) { throw std::runtime_error("bad shape 2x3"); }, kCPU, {}, {a},
                  FnProperty::kNormal, 0, "make_a");
    eng->PushSync([&](RunContext) { reader_ran = true; }, kCPU, {a}, {b}, FnProperty::kNormal, 0,
                  "b_from_a");
    std::string msg = ErrorOf([&] { eng->WaitForVar(b); });
    CHECK(msg == "engine op 'make_a' failed: bad shape 2x3");
    CHECK_FALSE(reader_ran);
    // Reported or not, the error stays: every wait on a, or on what was
    // computed from it, raises it again; none reads stale memory.
    CHECK(ErrorOf([&] { eng->WaitForVar(a); }) == msg);
    CHECK(ErrorOf([&] { eng->WaitForVar(b); }) == msg);
    CHECK(ErrorOf([&] { eng->WaitForVar(b, WaitMode::kWrite); }) == msg);
    // WaitForAll reports an error once: a wait has shown this one.
    CHECK(ErrorOf([&] { eng->WaitForAll(); }) == "");
    // A later reader is skipped too and poisons what it writes.
    int x = 0;
    eng->PushSync([&](RunContext) { x = 1; }, kCPU, {a}, {c});
    CHECK(ErrorOf([&] { eng->WaitForVar(c); }) == msg);
    CHECK(x == 0);
    // The engine is fully usable: a successful write cleans a variable, and
    // ops on clean variables run.
    eng->PushSync(nullptr, kCPU, {}, {a});
    eng->PushSync([&](RunContext) { x = 1; }, kCPU, {a}, {c});
    eng->WaitForVar(c);
    CHECK(x == 1);
    // A successful write makes a variable clean again.
    eng->PushSync([](RunContext) { throw Error("boom"); }, kCPU, {}, {a});
    CHECK(ErrorOf([&] { eng->WaitForVar(a); }) == "engine op 'unnamed' failed: boom");
    eng->PushSync(nullptr, kCPU, {}, {a});
    CHECK(ErrorOf([&] { eng->WaitForVar(a); }) == "");
  }
}

TEST_CASE("WaitForAll rethrows the first unreported error and counts the rest") {
  for (auto& eng : BothEngines()) {
    CAPTURE(Name(eng.get()));
    std::vector<VarHandle> vars;
    for (int i = 0; i < 20; ++i) {
      vars.push_back(eng->NewVariable());
      eng->PushSync([](RunContext) { throw std::runtime_error("failed"); }, kCPU, {}, {vars.back()},
                    FnProperty::kNormal, 0, "fail");
    }
    std::string msg = ErrorOf([&] { eng->WaitForAll(); });
    CHECK(msg == "engine op 'fail' failed: failed (and 19 more failed ops)");
    CHECK(ErrorOf([&] { eng->WaitForAll(); }) == "");
    // Reported by WaitForAll, each variable is still poisoned.
    for (VarHandle v : vars)
      CHECK(ErrorOf([&] { eng->WaitForVar(v); }) == "engine op 'fail' failed: failed");
  }
}

TEST_CASE("async ops fail through the callback or by throwing") {
  for (auto& eng : BothEngines()) {
    CAPTURE(Name(eng.get()));
    VarHandle a = eng->NewVariable(), b = eng->NewVariable();
    eng->PushAsync(
        [](RunContext, CallbackOnComplete done) {
          done(std::make_exception_ptr(std::runtime_error("device lost")));
        },
        kCPU, {}, {a}, FnProperty::kNormal, 0, "async_cb");
    eng->PushAsync([](RunContext, CallbackOnComplete) { throw std::runtime_error("no"); }, kCPU, {},
                   {b}, FnProperty::kNormal, 0, "async_throw");
    CHECK(ErrorOf([&] { eng->WaitForVar(a); }) == "engine op 'async_cb' failed: device lost");
    CHECK(ErrorOf([&] { eng->WaitForVar(b); }) == "engine op 'async_throw' failed: no");
  }
}

TEST_CASE("errors from many concurrent failing ops are each reported once") {
  auto eng = Threaded(4);
  constexpr int kOps = 2000;
  std::vector<VarHandle> vars(64);
  for (auto& v : vars) v = eng->NewVariable();
  for (int i = 0; i < kOps; ++i) {
    VarHandle v = vars[i % vars.size()];
    if (i % 7 == 0)
      eng->PushSync([](RunContext) { throw std::runtime_error("x"); }, kCPU, {}, {v});
    else
      eng->PushSync(nullptr, kCPU, {}, {v});
  }
  // Poison is cleared by later successful writes of the same variable, so
  // which errors are still pending depends on order; every wait must be clean
  // or throw, and a second WaitForAll must be clean.
  std::thread waiter([&] {
    for (VarHandle v : vars) ErrorOf([&] { eng->WaitForVar(v); });
  });
  ErrorOf([&] { eng->WaitForAll(); });
  waiter.join();
  CHECK(ErrorOf([&] { eng->WaitForAll(); }) == "");
}

TEST_CASE("WaitForVar inside an op does not starve the workers") {
  auto eng = Threaded(1);
  VarHandle a = eng->NewVariable(), v = eng->NewVariable();
  std::atomic<bool> written{false}, pushed{false};
  bool saw_write = false;
  // The only worker runs this op, which waits for an op pushed after it (and
  // queued behind it on the same lane).
  eng->PushSync(
      [&](RunContext) {
        WaitFlag(pushed);
        eng->WaitForVar(v);
        saw_write = written.load();
      },
      kCPU, {}, {a});
  eng->PushSync([&](RunContext) { written = true; }, kCPU, {}, {v});
  pushed = true;
  eng->WaitForAll();
  CHECK(saw_write);

  // Every worker blocked at once, waiting for ops queued behind them.
  auto eng2 = Threaded(2);
  constexpr int kWaiters = 6;
  std::vector<VarHandle> outs(kWaiters), ins(kWaiters);
  std::atomic<int> ok{0};
  for (int i = 0; i < kWaiters; ++i) {
    outs[i] = eng2->NewVariable();
    ins[i] = eng2->NewVariable();
  }
  std::atomic<bool> all_pushed{false};
  std::atomic<int> saw_writes{0};
  std::vector<std::atomic<bool>> ins_written(kWaiters);
  for (int i = 0; i < kWaiters; ++i)
    eng2->PushSync(
        [&, i](RunContext) {
          WaitFlag(all_pushed);
          eng2->WaitForVar(ins[i]);
          saw_writes += ins_written[i].load();
          ++ok;
        },
        kCPU, {}, {outs[i]});
  for (int i = 0; i < kWaiters; ++i)
    eng2->PushSync([&, i](RunContext) { ins_written[i] = true; }, kCPU, {}, {ins[i]});
  all_pushed = true;
  eng2->WaitForAll();
  CHECK(ok == kWaiters);
  CHECK(saw_writes == kWaiters);
}

TEST_CASE("an op may push ops and wait for them, with one worker") {
  for (auto& eng : BothEngines()) {
    CAPTURE(Name(eng.get()));
    auto one = Threaded(1);
    Engine* e = eng->type() == EngineType::kThreaded ? one.get() : eng.get();
    VarHandle outer = e->NewVariable(), inner = e->NewVariable();
    int value = 0;
    for (int round = 0; round < 50; ++round) {
      e->PushSync(
          [&](RunContext) {
            // The pushed op is ready at once; it must not be parked on this
            // thread, which is about to wait for it.
            e->PushSync([&](RunContext) { value = round; }, kCPU, {}, {inner});
            e->WaitForVar(inner);
          },
          kCPU, {}, {outer});
      e->WaitForVar(outer);
      CHECK(value == round);
    }
    e->WaitForAll();
  }
}

TEST_CASE("waits that would wait for the calling op itself are errors, not deadlocks") {
  for (auto& eng : BothEngines()) {
    CAPTURE(Name(eng.get()));
    VarHandle v = eng->NewVariable(), r = eng->NewVariable();
    std::string self_wait, self_write_wait, all_wait;
    eng->PushSync(
        [&](RunContext) {
          self_wait = ErrorOf([&] { eng->WaitForVar(v); });
          self_write_wait = ErrorOf([&] { eng->WaitForVar(r, WaitMode::kWrite); });
          all_wait = ErrorOf([&] { eng->WaitForAll(); });
          eng->WaitForVar(r);  // reading a variable this op only reads is fine
        },
        kCPU, {r}, {v}, FnProperty::kNormal, 0, "selfish");
    eng->WaitForAll();
    CHECK(self_wait.find("inside engine op 'selfish'") != std::string::npos);
    CHECK(self_write_wait.find("inside engine op 'selfish'") != std::string::npos);
    CHECK(all_wait.find("WaitForAll inside engine op 'selfish'") != std::string::npos);
  }
}

TEST_CASE("waits on work pushed inside an op that must wait for the op are errors, not deadlocks") {
  auto eng = CreateEngine(EngineType::kThreaded);
  {
    VarHandle a = eng->NewVariable(), b = eng->NewVariable(), c = eng->NewVariable();
    VarHandle r = eng->NewVariable(), x = eng->NewVariable(), y = eng->NewVariable();
    VarHandle t = eng->NewVariable();
    std::string direct, chained, write_wait, later;
    bool independent_waited = false;
    std::vector<std::string> order;
    eng->PushSync(
        [&](RunContext) {
          // b = f(a) queues behind this op (it writes a); c = g(b) behind b.
          eng->PushSync([&](RunContext) { order.push_back("b"); }, kCPU, {a}, {b});
          eng->PushSync([&](RunContext) { order.push_back("c"); }, kCPU, {b}, {c});
          direct = ErrorOf([&] { eng->WaitForVar(b); });
          chained = ErrorOf([&] { eng->WaitForVar(c); });
          // A read of r (which this op reads) pushed here does not wait for
          // the op, but a write wait on t, read by work behind the op, does.
          eng->PushSync([&](RunContext) {}, kCPU, {r, c}, {t});
          write_wait = ErrorOf([&] { eng->WaitForVar(c, WaitMode::kWrite); });
          // Work that does not touch the op's variables may be waited for.
          eng->PushSync([&](RunContext) { order.push_back("y"); }, kCPU, {x}, {y});
          eng->WaitForVar(y);
          independent_waited = true;
          order.push_back("op");
        },
        kCPU, {r}, {a}, FnProperty::kNormal, 0, "pusher");
    eng->WaitForVar(a);  // the op ran (and pushed b and c)
    eng->WaitForVar(c);
    // After the op, its marks mean nothing: a plain wait from outside works.
    later = ErrorOf([&] { eng->WaitForVar(t, WaitMode::kWrite); });
    CHECK(Contains(direct, "inside engine op 'pusher'"));
    CHECK(Contains(direct, "would wait for the op itself"));
    CHECK(Contains(chained, "inside engine op 'pusher'"));
    CHECK(Contains(write_wait, "inside engine op 'pusher'"));
    CHECK(independent_waited);
    CHECK(later.empty());
    CHECK(order == std::vector<std::string>{"y", "op", "b", "c"});
    for (VarHandle v : {a, b, c, r, x, y, t}) eng->DeleteVariable(nullptr, kCPU, v);
    eng->WaitForAll();
  }
}

TEST_CASE("the naive engine refuses a push inside an op that must wait for the op") {
  auto eng = CreateEngine(EngineType::kNaive);
  VarHandle a = eng->NewVariable(), b = eng->NewVariable(), x = eng->NewVariable();
  std::string refused;
  bool other_ran = false;
  eng->PushSync(
      [&](RunContext) {
        refused = ErrorOf([&] { eng->PushSync([](RunContext) {}, kCPU, {a}, {b}, {}, 0, "b"); });
        eng->PushSync([&](RunContext) { other_ran = true; }, kCPU, {}, {x});
      },
      kCPU, {}, {a}, FnProperty::kNormal, 0, "pusher");
  CHECK(Contains(refused, "engine op 'b' pushed inside engine op 'pusher' needs variables"));
  CHECK(other_ran);
  eng->WaitForAll();
}

TEST_CASE("NotifyWhenSettled: a reader's notice follows writes only, a writer's reads too") {
  auto eng = Threaded(2);
  VarHandle v = eng->NewVariable(), bad = eng->NewVariable();
  std::atomic<bool> release{false}, read_notice{false}, write_notice{false};
  eng->PushSync([](RunContext) {}, kCPU, {}, {v});
  // A long reader, running while the notices are asked for.
  eng->PushSync([&](RunContext) { WaitFlag(release); }, kCPU, {v}, {});
  auto notice = [](std::atomic<bool>* flag) {
    return [flag](std::exception_ptr e) {
      CHECK_FALSE(e);
      flag->store(true);
    };
  };
  eng->NotifyWhenSettled({&v, 1}, notice(&read_notice), WaitMode::kRead);
  eng->NotifyWhenSettled({&v, 1}, notice(&write_notice));
  CHECK(WaitFlag(read_notice));
  std::this_thread::sleep_for(20ms);
  CHECK_FALSE(write_notice.load());  // the reader still runs
  release.store(true);
  CHECK(WaitFlag(write_notice));
  // Both modes hand over the error of a failed writer, claimed: WaitForAll
  // does not report it again.
  eng->PushSync([](RunContext) { throw std::runtime_error("bad write"); }, kCPU, {}, {bad},
                FnProperty::kNormal, 0, "Writer");
  for (WaitMode mode : {WaitMode::kRead, WaitMode::kWrite}) {
    std::atomic<bool> done{false};
    std::exception_ptr error;
    eng->NotifyWhenSettled(
        {&bad, 1},
        [&](std::exception_ptr e) {
          error = e;
          done.store(true);
        },
        mode);
    REQUIRE(WaitFlag(done));
    REQUIRE(error);
    CHECK(ErrorOf([&] { std::rethrow_exception(error); }).find("Writer") != std::string::npos);
  }
  eng->WaitForAll();
}

TEST_CASE("DeleteVariable runs after every pending use") {
  for (auto& eng : BothEngines()) {
    CAPTURE(Name(eng.get()));
    VarHandle v = eng->NewVariable();
    std::atomic<int> uses{0};
    int seen_at_delete = -1;
    for (int i = 0; i < 200; ++i) {
      if (i % 2)
        eng->PushSync([&](RunContext) { ++uses; }, kCPU, {v}, {});
      else
        eng->PushAsync(
            [&](RunContext, CallbackOnComplete done) {
              std::thread([&uses, done] {
                ++uses;
                done();
              }).detach();
            },
            kCPU, {}, {v});
    }
    eng->DeleteVariable([&](RunContext) { seen_at_delete = uses.load(); }, kCPU, v);
    eng->WaitForAll();
    CHECK(seen_at_delete == 200);
    // Using a deleted handle is refused (while the pool has not reused it).
    VarHandle w = eng->NewVariable();
    eng->DeleteVariable(nullptr, kCPU, w);
    CHECK(ErrorOf([&] { eng->PushSync(nullptr, kCPU, {w}, {}); }).find("after DeleteVariable") !=
          std::string::npos);
    eng->WaitForAll();
  }
}

TEST_CASE("deleting an idle variable runs its function at once; a poisoned one's runs too") {
  for (auto& eng : BothEngines()) {
    CAPTURE(Name(eng.get()));
    // Nothing queued: the deletion does not wait for any thread.
    VarHandle idle = eng->NewVariable();
    eng->PushSync([](RunContext) {}, kCPU, {}, {idle});
    eng->WaitForVar(idle);
    bool freed = false;
    eng->DeleteVariable([&](RunContext r) { freed = r.ctx == kCPU; }, kCPU, idle);
    CHECK(freed);
    // A variable a failed op poisoned is still freed (its memory would
    // otherwise never return to the pool), and the error is still reported.
    VarHandle bad = eng->NewVariable();
    // The naive engine runs the op inside the push: release it at once.
    std::atomic<bool> release{eng->type() == EngineType::kNaive}, deleted{false};
    eng->PushSync(
        [&](RunContext) {
          WaitFlag(release);
          throw std::runtime_error("kernel boom");
        },
        kCPU, {}, {bad});
    eng->DeleteVariable([&](RunContext) { deleted = true; }, kCPU, bad);
    release = true;
    CHECK(Contains(ErrorOf([&] { eng->WaitForAll(); }), "kernel boom"));
    CHECK(deleted.load());
  }
}

TEST_CASE("TryRunNow runs on the calling thread only when its variables are free") {
  auto eng = Threaded();
  VarHandle v = eng->NewVariable(), w = eng->NewVariable();
  int ran = 0;
  CHECK(eng->TryRunNow([&] { ++ran; }, {v}, {w}, "now"));
  CHECK(ran == 1);
  CHECK(Engine::VarVersion(w) == 1);
  CHECK(Engine::VarVersion(v) == 0);
  // A write held by an unfinished op: reading or writing v must wait.
  // Async ops whose callbacks this thread calls once the checks are done.
  std::optional<CallbackOnComplete> write_done, read_done;
  std::atomic<bool> write_started{false}, read_started{false};
  eng->PushAsync(
      [&](RunContext, CallbackOnComplete done) {
        write_done = done;
        write_started = true;
      },
      kCPU, {}, {v});
  CHECK(WaitFlag(write_started));
  CHECK_FALSE(eng->TryRunNow([&] { ++ran; }, {v}, {w}, "now"));
  CHECK_FALSE(eng->TryRunNow([&] { ++ran; }, {}, {v}, "now"));
  (*write_done)();
  eng->WaitForVar(v, WaitMode::kWrite);
  // A pending read lets other reads run but not a write.
  eng->PushAsync(
      [&](RunContext, CallbackOnComplete done) {
        read_done = done;
        read_started = true;
      },
      kCPU, {v}, {});
  CHECK(WaitFlag(read_started));
  CHECK(eng->TryRunNow([&] { ++ran; }, {v}, {w}, "now"));
  CHECK_FALSE(eng->TryRunNow([&] { ++ran; }, {}, {v}, "now"));
  (*read_done)();
  eng->WaitForAll();
  CHECK(ran == 2);
  // Lists are normalised as a push's: a variable named twice is held once,
  // and one both read and written is written (its version counts one write).
  const uint64_t v0 = Engine::VarVersion(v), w0 = Engine::VarVersion(w);
  CHECK(eng->TryRunNow([&] { ++ran; }, {v}, {v}, "now"));
  CHECK(eng->TryRunNow([&] { ++ran; }, {v, v}, {w, w}, "now"));
  CHECK(ran == 4);
  CHECK(Engine::VarVersion(v) == v0 + 1);
  CHECK(Engine::VarVersion(w) == w0 + 1);
  // Held once means released once: both are free again.
  CHECK(eng->TryRunNow([&] { ++ran; }, {}, {v, w}, "now"));
  CHECK(ran == 5);
  eng->DeleteVariable(nullptr, kCPU, v);
  eng->DeleteVariable(nullptr, kCPU, w);
  eng->WaitForAll();
}

TEST_CASE("TryRunNow holds its variables: pushes meanwhile queue behind it") {
  for (auto& eng : BothEngines()) {
    CAPTURE(Name(eng.get()));
    VarHandle v = eng->NewVariable();
    int value = 0, seen = -1;
    CHECK(eng->TryRunNow(
        [&] {
          // Pushed from another thread while this run holds v: it must run
          // after this run's write (the naive engine would deadlock here
          // were the push to run inline, so only the threaded one pushes).
          if (eng->type() == EngineType::kThreaded)
            std::thread([&] {
              eng->PushSync([&](RunContext) { seen = value; }, kCPU, {v}, {});
            }).join();
          std::this_thread::sleep_for(10ms);
          value = 42;
        },
        {}, {v}, "now"));
    eng->WaitForAll();
    if (eng->type() == EngineType::kThreaded) CHECK(seen == 42);
    eng->DeleteVariable(nullptr, kCPU, v);
    eng->WaitForAll();
  }
}

TEST_CASE("TryRunNow: an exception poisons what it writes until a run overwrites it") {
  for (auto& eng : BothEngines()) {
    CAPTURE(Name(eng.get()));
    VarHandle v = eng->NewVariable(), w = eng->NewVariable();
    CHECK(eng->TryRunNow([] { throw Error("tiny failed"); }, {v}, {w}, "tiny_op"));
    // A poisoned input is left to a push, which skips and passes the poison on.
    bool ran = false;
    CHECK_FALSE(eng->TryRunNow([&] { ran = true; }, {w}, {v}, "next"));
    CHECK_FALSE(ran);
    CHECK(ErrorOf([&] { eng->WaitForVar(w); }) == "engine op 'tiny_op' failed: tiny failed");
    CHECK(ErrorOf([&] { eng->WaitForAll(); }) == "");
    // A successful run over the variable makes it clean again.
    CHECK(eng->TryRunNow([] {}, {}, {w}, "clean"));
    CHECK(eng->TryRunNow([&] { ran = true; }, {w}, {v}, "next"));
    CHECK(ran);
    eng->DeleteVariable(nullptr, kCPU, v);
    eng->DeleteVariable(nullptr, kCPU, w);
    eng->WaitForAll();
  }
}

TEST_CASE("an async op that ends inside its function, then waits, does not strand the next op") {
  // With one worker: ending A makes B ready, and B is kept for the worker
  // that runs A. A then waits for B's output; the wait must let B run.
  auto eng = Threaded(1);
  VarHandle v = eng->NewVariable(), w = eng->NewVariable();
  std::atomic<bool> b_ran{false}, b_pushed{false}, a_returned{false};
  bool a_saw_b = false;
  eng->PushAsync(
      [&](RunContext, CallbackOnComplete done) {
        WaitFlag(b_pushed);  // B queues behind A on v
        done();
        eng->WaitForVar(w);
        a_saw_b = b_ran.load();
        a_returned = true;  // A ended at done(): WaitForAll does not wait for this
      },
      kCPU, {}, {v}, FnProperty::kNormal, 0, "A");
  eng->PushSync([&](RunContext) { b_ran = true; }, kCPU, {v}, {w}, FnProperty::kNormal, 0, "B");
  b_pushed = true;
  REQUIRE(WaitFlag(a_returned));
  CHECK(a_saw_b);
  eng->DeleteVariable(nullptr, kCPU, v);
  eng->DeleteVariable(nullptr, kCPU, w);
  eng->WaitForAll();
}

TEST_CASE("persistent operators run on every push and are freed after the last") {
  for (auto& eng : BothEngines()) {
    CAPTURE(Name(eng.get()));
    VarHandle v = eng->NewVariable();
    auto count = std::make_shared<std::atomic<int>>(0);
    OprHandle op = eng->NewOperator(
        [count](RunContext, CallbackOnComplete done) {
          ++*count;
          done();
        },
        {}, {v}, FnProperty::kNormal, "counter");
    for (int i = 0; i < 1000; ++i) eng->Push(op, kCPU);
    eng->DeleteOperator(op);  // pushes still pending: freed when they finish
    eng->WaitForAll();
    CHECK(*count == 1000);
    CHECK(Engine::VarVersion(v) == 1000);
  }
}

TEST_CASE("priority ops overtake queued normal ops") {
  auto eng = Threaded(1);
  VarHandle gate_var = eng->NewVariable();
  std::atomic<bool> gate{false}, started{false};
  std::vector<int> order;
  std::mutex mu;
  eng->PushSync(
      [&](RunContext) {
        started = true;
        WaitFlag(gate);
      },
      kCPU, {}, {gate_var});
  REQUIRE(WaitFlag(started));
  std::vector<VarHandle> vars(10);
  for (auto& v : vars) v = eng->NewVariable();
  for (int i = 0; i < 10; ++i) {
    int prio = i == 9 ? 5 : 0;
    eng->PushSync(
        [&, i](RunContext) {
          std::lock_guard<std::mutex> lock(mu);
          order.push_back(i);
        },
        kCPU, {}, {vars[i]}, FnProperty::kNormal, prio);
  }
  gate = true;
  eng->WaitForAll();
  REQUIRE(order.size() == 10);
  CHECK(order.front() == 9);
}

TEST_CASE("the prioritized and copy lanes run beside a busy compute lane") {
  auto eng = Threaded(1);
  VarHandle busy = eng->NewVariable(), p = eng->NewVariable(), c = eng->NewVariable();
  std::atomic<bool> release{false}, prio_ran{false}, copy_ran{false};
  eng->PushSync([&](RunContext) { WaitFlag(release); }, kCPU, {}, {busy});
  eng->PushSync([&](RunContext) { prio_ran = true; }, kCPU, {}, {p}, FnProperty::kCPUPrioritized);
  eng->PushSync([&](RunContext) { copy_ran = true; }, kCPU, {}, {c}, FnProperty::kCopyCPU);
  CHECK(WaitFlag(prio_ran));
  CHECK(WaitFlag(copy_ran));
  release = true;
  eng->WaitForAll();
  EngineStats s = eng->Stats();
  CHECK(s.type == "threaded");
  CHECK(s.lanes.size() == 3);
}

namespace {

// Pushes `n` ops of 50 µs on `v`, each declaring `bytes` of new memory;
// returns the most ops seen in flight.
int64_t MostInFlight(Engine* eng, VarHandle v, int n, size_t bytes) {
  int64_t most = 0;
  for (int i = 0; i < n; ++i) {
    eng->PushSync([](RunContext) { std::this_thread::sleep_for(50us); }, kCPU, {}, {v},
                  FnProperty::kNormal, 0, "slow", bytes);
    most = std::max(most, eng->Stats().pending);
  }
  eng->WaitForAll();
  return most;
}

}  // namespace

TEST_CASE("the run-ahead bound limits ops and new memory in flight; one large op still runs") {
  EngineOptions opts;
  opts.cpu_workers = 1;
  opts.inflight = {4, 0, 0};
  auto eng = CreateEngine(EngineType::kThreaded, opts);
  VarHandle v = eng->NewVariable();
  const int64_t by_ops = MostInFlight(eng.get(), v, 200, 0);
  CHECK(by_ops <= 4);
  CHECK(by_ops >= 2);
  // Bytes are kept in whole KiB: three of 1 KiB fit in 3.5 KiB, a fourth not.
  eng->SetMaxInflight({0, 3584, 0});
  const int64_t by_bytes = MostInFlight(eng.get(), v, 100, 1024);
  CHECK(by_bytes <= 3);
  CHECK(by_bytes >= 2);
  // Larger than the bound alone: it waits for the others, then runs.
  eng->PushSync([](RunContext) {}, kCPU, {}, {v}, FnProperty::kNormal, 0, "huge", 1 << 20);
  eng->PushSync([](RunContext) {}, kCPU, {}, {v}, FnProperty::kNormal, 0, "after", 1024);
  eng->WaitForAll();
  CHECK(Engine::VarVersion(v) == 302);
  // Outputs under 1 KiB are not counted: the byte bound alone never holds them.
  eng->SetMaxInflight({0, 1, 0});
  CHECK(MostInFlight(eng.get(), v, 100, 1023) > 3);
  // A GPU memory bound does not hold CPU ops, whose memory is the host's.
  eng->SetMaxInflight({0, 0, 3584});
  CHECK(MostInFlight(eng.get(), v, 100, 1024) > 3);
  CHECK(eng->MaxInflight() == InflightBound{0, 0, 3584});
  eng->SetMaxInflight({0, 0, 0});  // unbounded again
  for (int i = 0; i < 100; ++i) eng->PushSync(nullptr, kCPU, {}, {v});
  eng->WaitForAll();
}

TEST_CASE("the run-ahead bound never holds up an op's own code") {
  EngineOptions opts;
  opts.cpu_workers = 1;
  opts.inflight.ops = 1;
  auto eng = CreateEngine(EngineType::kThreaded, opts);
  VarHandle a = eng->NewVariable(), b = eng->NewVariable();
  // The op itself is in flight, so a bound of 1 is reached; its pushes
  // must not wait for room it can only make by returning.
  eng->PushSync(
      [&](RunContext) {
        for (int i = 0; i < 20; ++i) eng->PushSync(nullptr, kCPU, {a}, {b});
      },
      kCPU, {}, {a});
  eng->WaitForAll();
  CHECK(Engine::VarVersion(b) == 20);
}

TEST_CASE("a GPU context without a GPU is a clear error and changes nothing") {
  for (auto& eng : BothEngines()) {
    CAPTURE(Name(eng.get()));
    if (NumGPUs() > 0) return;
    VarHandle v = eng->NewVariable();
    std::string msg = ErrorOf([&] { eng->PushSync(nullptr, Context::GPU(0), {}, {v}); });
    if (BuiltWithCUDA())
      CHECK(msg == "gpu(0) is not available: 0 GPUs");
    else
      CHECK(msg == "gpu(0): this build has no CUDA");
    eng->PushSync(nullptr, kCPU, {}, {v});
    eng->WaitForAll();
    CHECK(Engine::VarVersion(v) == 1);
    CHECK(eng->Stats().pending == 0);
  }
}

TEST_CASE("more ready ops than the lane's ring holds spill over and all run") {
  auto eng = Threaded(1);
  VarHandle gate = eng->NewVariable();
  std::atomic<bool> release{false}, started{false};
  eng->PushSync(
      [&](RunContext) {
        started = true;
        WaitFlag(release);
      },
      kCPU, {}, {gate});
  REQUIRE(WaitFlag(started));
  constexpr int kOps = 20000;  // several times the ring's capacity
  std::vector<VarHandle> vars(kOps);
  std::atomic<int> ran{0};
  for (auto& v : vars) v = eng->NewVariable();
  for (int i = 0; i < kOps; ++i)
    eng->PushSync([&](RunContext) { ++ran; }, kCPU, {}, {vars[i]}, FnProperty::kNormal,
                  i % 1000 == 0 ? 1 : 0);
  CHECK(eng->Stats().lanes.at(0).queued == kOps);
  release = true;
  eng->WaitForAll();
  CHECK(ran == kOps);
  CHECK(eng->Stats().lanes.at(0).queued == 0);
  for (VarHandle v : vars) eng->DeleteVariable(nullptr, kCPU, v);
  eng->DeleteVariable(nullptr, kCPU, gate);
  eng->WaitForAll();
}

TEST_CASE("the naive engine runs each push before returning") {
  auto eng = CreateEngine(EngineType::kNaive);
  VarHandle v = eng->NewVariable();
  bool ran = false;
  eng->PushSync([&](RunContext) { ran = true; }, kCPU, {}, {v});
  CHECK(ran);
  CHECK(Engine::VarVersion(v) == 1);
}

// The naive engine runs a push on the spot when its variables are free; a
// push that another thread's running op holds a variable of queues behind
// that op instead, and profiled pushes still show in the profiler.
TEST_CASE("the naive engine queues a push behind another thread's op, and profiles its pushes") {
  auto eng = CreateEngine(EngineType::kNaive);
  VarHandle v = eng->NewVariable(), w = eng->NewVariable();
  std::atomic<bool> holding{false}, release{false};
  std::vector<int> order;
  std::thread other([&] {
    eng->PushSync(
        [&](RunContext) {
          holding = true;
          while (!release.load()) std::this_thread::yield();
          order.push_back(1);
        },
        kCPU, {}, {v}, FnProperty::kNormal, 0, "holder");
  });
  REQUIRE(WaitFlag(holding));
  // w is free: runs now, though v is held.
  bool ran_w = false;
  eng->PushSync([&](RunContext) { ran_w = true; }, kCPU, {}, {w});
  CHECK(ran_w);
  std::thread releaser([&] {
    std::this_thread::sleep_for(20ms);
    release = true;
  });
  eng->PushSync([&](RunContext) { order.push_back(2); }, kCPU, {v}, {w}, FnProperty::kNormal, 0,
                "reader");
  CHECK(order == std::vector<int>{1, 2});
  other.join();
  releaser.join();
  CHECK(Engine::VarVersion(v) == 1);
  CHECK(Engine::VarVersion(w) == 2);

  Profiler* prof = Profiler::Get();
  prof->Clear();
  prof->SetState(true);
  eng->PushSync([](RunContext) {}, kCPU, {}, {v}, FnProperty::kNormal, 0, "naive_profiled_op");
  prof->SetState(false);
  size_t count = 0;
  for (const OpAggregate& a : prof->Aggregate())
    if (a.name == "naive_profiled_op") count += a.count;
  prof->Clear();
  CHECK(count == 1);
  eng->DeleteVariable({}, kCPU, v);
  eng->DeleteVariable({}, kCPU, w);
  eng->WaitForAll();
}

TEST_CASE("long chains of inline ops do not exhaust the stack") {
  auto eng = Threaded(1);
  VarHandle v = eng->NewVariable(), gate = eng->NewVariable();
  std::atomic<bool> release{false};
  eng->PushSync([&](RunContext) { WaitFlag(release); }, kCPU, {}, {gate});
  // All queued behind the gate, then released at once: each completion makes
  // the next inline op ready on the same thread.
  int count = 0;
  eng->PushSync(nullptr, kCPU, {gate}, {v});
  for (int i = 0; i < 20000; ++i)
    eng->PushAsync(
        [&count](RunContext, CallbackOnComplete done) {
          ++count;
          done();
        },
        kCPU, {}, {v}, FnProperty::kAsync);
  release = true;
  eng->WaitForAll();
  CHECK(count == 20000);
}

TEST_CASE("the global engine switches type at run time") {
  Engine* before = Engine::Get();
  Engine::SetType(EngineType::kNaive);
  Engine* naive = Engine::Get();
  CHECK(naive->type() == EngineType::kNaive);
  VarHandle v = naive->NewVariable();
  bool ran = false;
  naive->PushSync([&](RunContext) { ran = true; }, kCPU, {}, {v});
  CHECK(ran);
  Engine::SetType(EngineType::kThreaded);
  Engine* threaded = Engine::Get();
  CHECK(threaded->type() == EngineType::kThreaded);
  threaded->PushSync(nullptr, kCPU, {v}, {v});  // variables move between engines
  threaded->WaitForVar(v);
  CHECK(Engine::VarVersion(v) == 2);
  Engine::SetType(before->type());
}

TEST_CASE("engine options come from the environment and are checked") {
  setenv("TESSERA_CPU_WORKER_NTHREADS", "3", 1);
  CHECK(EngineOptions::FromEnv().cpu_workers == 3);
  setenv("TESSERA_CPU_WORKER_NTHREADS", "three", 1);
  CHECK(ErrorOf([] { EngineOptions::FromEnv(); }) ==
        "environment variable TESSERA_CPU_WORKER_NTHREADS='three' is not an integer");
  setenv("TESSERA_CPU_WORKER_NTHREADS", "0", 1);
  CHECK(ErrorOf([] { EngineOptions::FromEnv(); }).find("1..256") != std::string::npos);
  unsetenv("TESSERA_CPU_WORKER_NTHREADS");
}

TEST_CASE("GPU lanes run ops on per-worker streams (needs a GPU)") {
  if (NumGPUs() == 0) {
    MESSAGE("skipped: no GPU");
    return;
  }
  auto eng = Threaded(1);
  std::mutex mu;
  std::set<void*> streams;
  std::vector<VarHandle> vars(64);
  for (auto& v : vars) v = eng->NewVariable();
  for (int i = 0; i < 64; ++i)
    eng->PushSync(
        [&](RunContext rctx) {
          std::lock_guard<std::mutex> lock(mu);
          streams.insert(rctx.stream);
          CHECK(rctx.ctx == Context::GPU(0));
        },
        Context::GPU(0), {}, {vars[i]}, i % 2 ? FnProperty::kNormal : FnProperty::kCopyToGPU);
  eng->WaitForAll();
  CHECK(streams.count(nullptr) == 0);
  CHECK(streams.size() >= 2);  // compute workers and the copy worker each have one
  auto naive = CreateEngine(EngineType::kNaive);
  void* seen = nullptr;
  naive->PushSync([&](RunContext rctx) { seen = rctx.stream; }, Context::GPU(0), {}, {vars[0]});
  CHECK(seen != nullptr);
}

TEST_CASE("WaitForAll runs queued ops on the waiting thread only while a worker is idle") {
  auto eng = Threaded(1);
  const std::thread::id me = std::this_thread::get_id();
  VarHandle a = eng->NewVariable(), b = eng->NewVariable();
  // The one worker is busy with `a` until released: the op on `b` queues,
  // and the waiter must leave it to the worker (no second OpenMP team on
  // busy cores) rather than run it.
  std::atomic<bool> started{false}, release{false};
  eng->PushSync(
      [&](RunContext) {
        started = true;
        while (!release) std::this_thread::sleep_for(1ms);
      },
      kCPU, {}, {a});
  while (!started) std::this_thread::sleep_for(1ms);
  std::thread::id ran_on;
  eng->PushSync([&](RunContext) { ran_on = std::this_thread::get_id(); }, kCPU, {}, {b});
  std::thread releaser([&] {
    std::this_thread::sleep_for(50ms);
    release = true;
  });
  eng->WaitForAll();
  releaser.join();
  CHECK(ran_on != me);
  // Chains of ops pushed and waited for come out right whichever thread
  // runs them, the waiting one included.
  int64_t sum = 0;
  for (int round = 0; round < 200; ++round) {
    for (int k = 1; k <= 5; ++k)
      eng->PushSync([&sum, k](RunContext) { sum = sum * 3 + k; }, kCPU, {}, {a});
    eng->WaitForAll();
    CHECK(sum == ((((1 * 3 + 2) * 3 + 3) * 3 + 4) * 3 + 5));
    sum = 0;
  }
  eng->DeleteVariable([](RunContext) {}, kCPU, a);
  eng->DeleteVariable([](RunContext) {}, kCPU, b);
  eng->WaitForAll();
}
