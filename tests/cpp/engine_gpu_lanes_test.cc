// The engine's GPU side on fake streams, so that it is tested where there is
// no GPU: each GPU op runs with its device current and on its device's
// stream, an op's stream is waited for even when the op throws, and a device
// whose stream cannot be made fails the push instead of the process.
//
// A fake stream keeps the work "launched" on it and runs it only when the
// stream is synchronised, as a real stream may run it any time before then.
#include <doctest/doctest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/base/error.h"
#include "engine/scheduler/engine.h"
#include "engine/scheduler/gpu_streams.h"

#include "tests/cpp/test_util.h"

using namespace tessera;
using namespace tessera::test;
using namespace tessera::engine;

namespace {

struct FakeStream {
  int dev;
  std::mutex mu;
  std::vector<std::function<void()>> launched;
};

thread_local int t_device = 0;
std::atomic<int> g_creates_left{1 << 30};  // creates that succeed before they start failing

int FakeNumGpus() {
  return 2;
}
int FakeSetDevice(int dev) {
  const int prev = t_device;
  t_device = dev;
  return prev;
}
void* FakeCreate(int dev) {
  if (g_creates_left.fetch_sub(1) <= 0) throw Error("fake: no memory for a stream");
  t_device = dev;
  return new FakeStream{dev, {}, {}};
}
void FakeSync(void* stream) {
  auto* s = static_cast<FakeStream*>(stream);
  std::vector<std::function<void()>> work;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    work.swap(s->launched);
  }
  for (auto& w : work) w();
}
void FakeDestroy(void* stream) {
  delete static_cast<FakeStream*>(stream);
}
// No events: each op waits for its stream (completion on events: engine_gpu_events_test.cc).
const GpuStreamOps kFakeOps{&FakeNumGpus, &FakeSetDevice, &FakeCreate, &FakeSync, &FakeDestroy,
                            nullptr,      nullptr,        nullptr,     nullptr,   nullptr};

// Installs the fake streams for the scope of a test; engines made inside it
// must be gone before it ends.
struct FakeGpus {
  FakeGpus() {
    g_creates_left = 1 << 30;
    t_device = 0;
    SetGpuStreamsForTesting(&kFakeOps);
  }
  ~FakeGpus() { SetGpuStreamsForTesting(nullptr); }
};

// What a kernel launch checks on a real GPU: a stream takes work only from
// its own device.
void Launch(const RunContext& run, std::function<void()> work) {
  auto* s = static_cast<FakeStream*>(run.stream);
  TS_CHECK(s) << "launch without a stream";
  TS_CHECK(t_device == s->dev) << "launch into gpu(" << s->dev << ")'s stream while gpu("
                               << t_device << ") is current";
  std::lock_guard<std::mutex> lock(s->mu);
  s->launched.push_back(std::move(work));
}

std::vector<std::unique_ptr<Engine>> BothEngines() {
  std::vector<std::unique_ptr<Engine>> v;
  v.push_back(CreateEngine(EngineType::kThreaded));
  v.push_back(CreateEngine(EngineType::kNaive));
  return v;
}

const char* Name(Engine* e) {
  return e->type() == EngineType::kThreaded ? "threaded" : "naive";
}

}  // namespace

TEST_CASE("GPU ops run with their device current, and leave the pusher's device alone") {
  FakeGpus fake;
  for (auto& e : BothEngines()) {
    INFO(Name(e.get()));
    t_device = 0;
    std::atomic<int> ran{0};
    for (int i = 0; i < 12; ++i) {
      const Context ctx = Context::GPU(i % 2 == 0 ? 1 : 0);
      const FnProperty prop = i % 3 == 2 ? FnProperty::kCopyToGPU : FnProperty::kNormal;
      e->PushSync([&ran](RunContext run) { Launch(run, [&ran] { ++ran; }); }, ctx, {}, {}, prop);
    }
    CHECK_NOTHROW(e->WaitForAll());  // a launch from the wrong device would fail its op
    CHECK(ran == 12);                // and every stream was waited for
    CHECK(t_device == 0);
  }
}

TEST_CASE("a GPU op that throws after launching is complete only when its stream is") {
  FakeGpus fake;
  for (auto& e : BothEngines()) {
    INFO(Name(e.get()));
    std::atomic<int> launched_work{0};
    VarHandle v = e->NewVariable();
    e->PushSync(
        [&](RunContext run) {
          Launch(run, [&] { launched_work = 42; });
          throw Error("failed after a launch");
        },
        Context::GPU(1), {}, {v}, FnProperty::kNormal, 0, "launcher");
    CHECK(Contains(ErrorOf([&] { e->WaitForVar(v); }), "failed after a launch"));
    // Released before its stream was done, the op's inputs could be freed
    // and reused while its kernels still read them.
    CHECK(launched_work == 42);
    e->DeleteVariable({}, Context::CPU(), v);
    ErrorOf([&] { e->WaitForAll(); });
  }
}

TEST_CASE("a device whose stream cannot be made fails the push; the engine carries on") {
  FakeGpus fake;
  for (auto& e : BothEngines()) {
    INFO(Name(e.get()));
    t_device = 0;
    g_creates_left = 0;
    const std::string msg =
        ErrorOf([&] { e->PushSync([](RunContext) {}, Context::GPU(1), {}, {}); });
    CHECK(Contains(msg, "fake: no memory for a stream"));
    CHECK(t_device == 0);
    std::atomic<bool> cpu_ran{false};
    e->PushSync([&](RunContext) { cpu_ran = true; }, Context::CPU(), {}, {});
    CHECK_NOTHROW(e->WaitForAll());
    CHECK(cpu_ran);

    g_creates_left = 1 << 30;  // the device recovers: its lane starts on the next push
    std::atomic<bool> gpu_ran{false};
    e->PushSync([&](RunContext run) { Launch(run, [&] { gpu_ran = true; }); }, Context::GPU(1), {},
                {});
    CHECK_NOTHROW(e->WaitForAll());
    CHECK(gpu_ran);
  }
}

TEST_CASE("a GPU worker without a stream fails its ops instead of the process") {
  FakeGpus fake;
  g_creates_left = 1;  // the threaded engine's trial stream, then no more
  auto e = CreateEngine(EngineType::kThreaded);
  VarHandle v = e->NewVariable();
  e->PushSync([](RunContext run) { Launch(run, [] {}); }, Context::GPU(0), {}, {v});
  CHECK(Contains(ErrorOf([&] { e->WaitForVar(v); }), "has no CUDA stream"));
  ErrorOf([&] { e->WaitForAll(); });
  std::atomic<bool> cpu_ran{false};
  e->PushSync([&](RunContext) { cpu_ran = true; }, Context::CPU(), {}, {});
  CHECK_NOTHROW(e->WaitForAll());
  CHECK(cpu_ran);
  e->DeleteVariable({}, Context::CPU(), v);
  e->WaitForAll();
}

TEST_CASE("a GPU beyond the count, or no GPU support, is a clear error at the push") {
  for (auto& e : BothEngines()) {
    INFO(Name(e.get()));
    {
      FakeGpus fake;
      CHECK(ErrorOf([&] { e->PushSync([](RunContext) {}, Context::GPU(2), {}, {}); }) ==
            "gpu(2) is not available: 2 GPUs");
    }
    if (!BuiltWithCUDA()) {
      CHECK(ErrorOf([&] { e->PushSync([](RunContext) {}, Context::GPU(0), {}, {}); }) ==
            "gpu(0): this build has no CUDA");
    }
  }
}
