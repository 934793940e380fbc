// GPU ops that complete once their work is queued (gpu_completion.h), on
// fake streams that run their work on threads of their own, as a GPU runs
// kernels while the host goes on: an event marks a point of a stream, a
// stream may wait for another's event, the host for any. Checked: the op
// completes before its kernel has run, whatever uses its variables next
// (another stream, the copy lane, a CPU op, a host wait, a deletion) waits
// for that kernel, and a randomized mix of ops on two GPUs and the CPU
// computes what a sequential run computes. Runs under ThreadSanitizer.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "engine/base/error.h"
#include "engine/scheduler/engine.h"
#include "engine/scheduler/gpu_streams.h"

#include "tests/cpp/test_util.h"

using namespace tessera;
using namespace tessera::test;
using namespace tessera::engine;

namespace {

// Events: one mutex and condition for all of them (tests make few).
std::mutex g_ev_mu;
std::condition_variable g_ev_cv;

struct FakeEvent {
  bool done = false;    // under g_ev_mu
  bool failed = false;  // a kernel of its stream failed before it
};

struct AsyncStream {
  explicit AsyncStream(int d) : dev(d), thread([this] { Run(); }) {}
  ~AsyncStream() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    cv.notify_all();
    thread.join();
  }
  void Enqueue(std::function<void()> work) {
    {
      std::lock_guard<std::mutex> lock(mu);
      queue.push_back(std::move(work));
    }
    cv.notify_all();
  }
  void Run() {
    for (;;) {
      std::function<void()> work;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return stop || !queue.empty(); });
        if (queue.empty()) return;  // stopped, and everything ran
        work = std::move(queue.front());
        queue.pop_front();
      }
      try {
        work();
      } catch (...) {
        failed = true;  // sticky, as a CUDA context after a faulting kernel
      }
    }
  }

  const int dev;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> queue;
  bool stop = false;
  bool failed = false;  // only the stream's thread touches it
  std::thread thread;
};

std::mutex g_mu;  // the registries below
std::vector<AsyncStream*> g_streams;
std::vector<std::unique_ptr<FakeEvent>> g_events;
thread_local int t_device = 0;

int NumGpus() {
  return 2;
}
int SetDevice(int dev) {
  const int prev = t_device;
  t_device = dev;
  return prev;
}
void* Create(int dev) {
  t_device = dev;
  auto* s = new AsyncStream(dev);
  std::lock_guard<std::mutex> lock(g_mu);
  g_streams.push_back(s);
  return s;
}
void Destroy(void* stream) {
  auto* s = static_cast<AsyncStream*>(stream);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    std::erase(g_streams, s);
  }
  delete s;
}
void* Record(void* stream) {
  auto* s = static_cast<AsyncStream*>(stream);
  FakeEvent* e;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    e = g_events.emplace_back(std::make_unique<FakeEvent>()).get();
  }
  s->Enqueue([s, e] {
    {
      std::lock_guard<std::mutex> lock(g_ev_mu);
      e->done = true;
      e->failed = s->failed;
    }
    g_ev_cv.notify_all();
  });
  return e;
}
void EventSync(void* event) {
  auto* e = static_cast<FakeEvent*>(event);
  std::unique_lock<std::mutex> lock(g_ev_mu);
  g_ev_cv.wait(lock, [&] { return e->done; });
  if (e->failed) throw Error("fake: a kernel failed");
}
bool EventDone(void* event) {
  auto* e = static_cast<FakeEvent*>(event);
  std::lock_guard<std::mutex> lock(g_ev_mu);
  if (e->done && e->failed) throw Error("fake: a kernel failed");
  return e->done;
}
void StreamWait(void* stream, void* event) {
  static_cast<AsyncStream*>(stream)->Enqueue([event] {
    auto* e = static_cast<FakeEvent*>(event);
    std::unique_lock<std::mutex> lock(g_ev_mu);
    g_ev_cv.wait(lock, [&] { return e->done; });
  });
}
void Sync(void* stream) {
  EventSync(Record(stream));
}
void DeviceSync(int dev) {
  std::vector<AsyncStream*> streams;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (AsyncStream* s : g_streams)
      if (s->dev == dev) streams.push_back(s);
  }
  for (AsyncStream* s : streams) EventSync(Record(s));
}

const GpuStreamOps kAsyncOps{&NumGpus, &SetDevice,  &Create,    &Sync,      &Destroy,
                             &Record,  &StreamWait, &EventSync, &EventDone, &DeviceSync};

struct AsyncGpus {
  AsyncGpus() { SetGpuStreamsForTesting(&kAsyncOps); }
  ~AsyncGpus() {
    SetGpuStreamsForTesting(nullptr);
    std::lock_guard<std::mutex> lock(g_mu);
    g_events.clear();
  }
};

void Launch(const RunContext& run, std::function<void()> work) {
  TS_CHECK(run.stream) << "launch without a stream";
  static_cast<AsyncStream*>(run.stream)->Enqueue(std::move(work));
}

// A kernel that holds its stream until the test opens the gate.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  void Wait() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return open; });
  }
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu);
      open = true;
    }
    cv.notify_all();
  }
};

template <typename F>
bool Eventually(F done) {
  for (int i = 0; i < 2000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

}  // namespace

TEST_CASE("a GPU op completes once its kernel is queued; a host wait waits for the kernel") {
  AsyncGpus fake;
  {
    auto e = CreateEngine(EngineType::kThreaded);
    VarHandle v = e->NewVariable();
    Gate gate;
    std::atomic<int> value{0}, second_launched{0};
    e->PushSync(
        [&](RunContext run) {
          Launch(run, [&] {
            gate.Wait();
            value = 1;
          });
        },
        Context::GPU(0), {}, {v});
    // Behind the first on the variable: it starts while the first's kernel
    // is still held, because the first op completed at its launch.
    e->PushSync(
        [&](RunContext run) {
          second_launched = 1;
          Launch(run, [&] { value = value * 10 + 2; });
        },
        Context::GPU(0), {}, {v});
    CHECK(Eventually([&] { return second_launched.load() == 1; }));
    CHECK(value == 0);
    CHECK_FALSE(Engine::IsSettled(v));  // the engine's side is done, the GPU's not
    gate.Open();
    e->WaitForVar(v);
    CHECK(value == 12);  // in push order, the host wait after both kernels
    CHECK(Engine::IsSettled(v));
    e->DeleteVariable({}, Context::CPU(), v);
    e->WaitForAll();
  }
}

TEST_CASE("whatever uses a variable next waits for the kernel queued on it") {
  AsyncGpus fake;
  auto e = CreateEngine(EngineType::kThreaded);
  struct Next {
    const char* what;
    Context ctx;
    FnProperty prop;
  };
  for (const Next& next : {Next{"CPU op", Context::CPU(), FnProperty::kNormal},
                           Next{"copy lane", Context::GPU(0), FnProperty::kCopyFromGPU},
                           Next{"other GPU", Context::GPU(1), FnProperty::kNormal},
                           Next{"same GPU", Context::GPU(0), FnProperty::kNormal}}) {
    INFO(next.what);
    VarHandle v = e->NewVariable(), out = e->NewVariable();
    Gate gate;
    std::atomic<int> value{0}, seen{-1};
    e->PushSync(
        [&](RunContext run) {
          Launch(run, [&] {
            gate.Wait();
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            value = 7;
          });
        },
        Context::GPU(0), {}, {v});
    e->PushSync(
        [&](RunContext run) {
          if (run.stream)
            Launch(run, [&] { seen = value.load(); });
          else
            seen = value.load();
        },
        next.ctx, {v}, {out}, next.prop);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(seen == -1);  // nothing ran ahead of the held kernel
    gate.Open();
    e->WaitForVar(out);
    CHECK(seen == 7);
    e->DeleteVariable({}, Context::CPU(), v);
    e->DeleteVariable({}, Context::CPU(), out);
  }
  e->WaitForAll();
}

TEST_CASE("deleting a variable frees its memory only after its queued kernels") {
  AsyncGpus fake;
  auto e = CreateEngine(EngineType::kThreaded);
  VarHandle v = e->NewVariable();
  Gate gate;
  std::atomic<bool> kernel_done{false}, freed{false}, freed_after_kernel{false};
  e->PushSync(
      [&](RunContext run) {
        Launch(run, [&] {
          gate.Wait();
          kernel_done = true;
        });
      },
      Context::GPU(1), {v}, {});  // a reader: the deletion must wait for reads too
  e->DeleteVariable(
      [&](RunContext) {
        freed_after_kernel = kernel_done.load();
        freed = true;
      },
      Context::GPU(1), v);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK_FALSE(freed);
  gate.Open();
  e->WaitForAll();
  CHECK(freed);
  CHECK(freed_after_kernel);
}

TEST_CASE("a kernel's failure reaches the host wait, and the engine carries on") {
  AsyncGpus fake;
  auto e = CreateEngine(EngineType::kThreaded);
  VarHandle v = e->NewVariable();
  e->PushSync([](RunContext run) { Launch(run, [] { throw Error("illegal address"); }); },
              Context::GPU(0), {}, {v});
  CHECK(Contains(ErrorOf([&] { e->WaitForVar(v); }), "fake: a kernel failed"));
  // The sticky failure stays with the device; the CPU side goes on.
  CHECK(Contains(ErrorOf([&] { e->WaitForAll(); }), "fake: a kernel failed"));
  std::atomic<bool> cpu_ran{false};
  VarHandle w = e->NewVariable();
  e->PushSync([&](RunContext) { cpu_ran = true; }, Context::CPU(), {}, {w});
  e->WaitForVar(w);
  CHECK(cpu_ran);
  e->DeleteVariable({}, Context::CPU(), w);
  e->DeleteVariable({}, Context::CPU(), v);
}

TEST_CASE("ops on two GPUs, their copy lanes and the CPU compute what a sequential run does") {
  AsyncGpus fake;
  constexpr int kVars = 12, kOps = 3000;
  for (int seed = 1; seed <= 3; ++seed) {
    INFO("seed " << seed);
    auto e = CreateEngine(EngineType::kThreaded);
    std::mt19937 rng(seed);
    std::vector<VarHandle> vars;
    std::vector<int64_t> value(kVars, 1), expect(kVars, 1);
    for (int i = 0; i < kVars; ++i) vars.push_back(e->NewVariable());
    for (int op = 0; op < kOps; ++op) {
      const int w = rng() % kVars, a = rng() % kVars, b = rng() % kVars;
      const int64_t k = op;
      expect[w] = (expect[a] * 3 + expect[b] + k) % 1000003;
      const int where = rng() % 6;
      const Context ctx = where == 0 ? Context::CPU() : Context::GPU(where % 2);
      const FnProperty prop = where == 5 ? FnProperty::kCopyToGPU : FnProperty::kNormal;
      const bool slow = rng() % 8 == 0;
      auto kernel = [&value, w, a, b, k, slow] {
        if (slow) std::this_thread::sleep_for(std::chrono::microseconds(50));
        value[w] = (value[a] * 3 + value[b] + k) % 1000003;
      };
      std::vector<VarHandle> reads;
      if (a != w) reads.push_back(vars[a]);
      if (b != w && b != a) reads.push_back(vars[b]);
      e->PushSync(
          [kernel](RunContext run) {
            if (run.stream)
              Launch(run, kernel);
            else
              kernel();
          },
          ctx, reads, {vars[w]}, prop);
      if (rng() % 200 == 0) {  // a host wait in the middle sees the sequential value
        const int r = rng() % kVars;
        e->WaitForVar(vars[r]);
        REQUIRE(value[r] == expect[r]);
      }
    }
    e->WaitForAll();
    CHECK(value == expect);
    for (VarHandle v : vars) e->DeleteVariable({}, Context::CPU(), v);
    e->WaitForAll();
  }
}

TEST_CASE("TESSERA_GPU_SYNC_EACH_OP: each GPU op completes only with its stream") {
  AsyncGpus fake;
  EngineOptions opts = EngineOptions::FromEnv();
  opts.gpu_sync_each_op = true;
  auto e = CreateEngine(EngineType::kThreaded, opts);
  VarHandle v = e->NewVariable();
  Gate gate;
  std::atomic<bool> second_ran{false};
  e->PushSync([&](RunContext run) { Launch(run, [&] { gate.Wait(); }); }, Context::GPU(0), {}, {v});
  e->PushSync([&](RunContext) { second_ran = true; }, Context::GPU(0), {}, {v});
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK_FALSE(second_ran);
  gate.Open();
  e->WaitForVar(v);
  CHECK(second_ran);
  e->DeleteVariable({}, Context::CPU(), v);
  e->WaitForAll();
}
