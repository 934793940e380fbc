// `make shell` runs this until the Lua shell exists: a short tour of the
// dependency engine. With --interactive it also explains where the REPL goes.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "engine/base/context.h"
#include "engine/base/error.h"
#include "engine/scheduler/engine.h"
#include "engine/scheduler/profiler.h"

using namespace tessera;
using namespace tessera::engine;

namespace {

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  bool interactive = argc > 1 && !std::strcmp(argv[1], "--interactive");
  Engine* eng = Engine::Get();
  std::printf("tessera engine demo (%s engine, CUDA %s, %d GPUs)\n",
              eng->type() == EngineType::kThreaded ? "threaded" : "naive",
              BuiltWithCUDA() ? "built" : "not built", BuiltWithCUDA() ? NumGPUs() : 0);

  // 1. Dependencies: x = 1; y = x + 1 and z = x * 10 read x in parallel; w = y + z.
  double x = 0, y = 0, z = 0, w = 0;
  VarHandle vx = eng->NewVariable(), vy = eng->NewVariable(), vz = eng->NewVariable(),
            vw = eng->NewVariable();
  Context cpu = Context::CPU();
  eng->PushSync([&](RunContext) { x = 1; }, cpu, {}, {vx}, FnProperty::kNormal, 0, "x=1");
  eng->PushSync([&](RunContext) { y = x + 1; }, cpu, {vx}, {vy}, FnProperty::kNormal, 0, "y=x+1");
  eng->PushSync([&](RunContext) { z = x * 10; }, cpu, {vx}, {vz}, FnProperty::kNormal, 0, "z=x*10");
  eng->PushSync([&](RunContext) { w = y + z; }, cpu, {vy, vz}, {vw}, FnProperty::kNormal, 0,
                "w=y+z");
  eng->WaitForVar(vw);
  std::printf("1. x=1; y=x+1; z=x*10; w=y+z  ->  w = %g (version of w: %llu)\n", w,
              static_cast<unsigned long long>(Engine::VarVersion(vw)));

  // 2. A failing op poisons what it writes; the error surfaces at the wait, once.
  eng->PushSync([](RunContext) { throw std::runtime_error("division by zero"); }, cpu, {vx}, {vy},
                FnProperty::kNormal, 0, "bad_div");
  eng->PushSync([&](RunContext) { w = y; }, cpu, {vy}, {vw}, FnProperty::kNormal, 0, "w=y");
  try {
    eng->WaitForVar(vw);
  } catch (const Error& e) {
    std::printf("2. WaitForVar(w) rethrew: %s\n", e.what());
  }
  eng->WaitForVar(vw);
  std::printf("   a second wait is clean; the engine carries on\n");

  // 3. Throughput: a million independent no-op ops, each writing its own variable.
  const int n = 1000000;
  std::vector<VarHandle> vars(n);
  for (auto& v : vars) v = eng->NewVariable();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) eng->PushSync(nullptr, cpu, {}, {vars[i]});
  eng->WaitForAll();
  std::printf("3. %d independent ops pushed, run and waited for in %.3f s (%.2f M ops/s)\n", n,
              Seconds(t0), n / Seconds(t0) / 1e6);
  for (auto v : vars) eng->DeleteVariable(nullptr, cpu, v);
  for (auto v : {vx, vy, vz, vw}) eng->DeleteVariable(nullptr, cpu, v);
  eng->WaitForAll();

  // 4. The profiler's aggregate view of what just ran.
  Profiler::Get()->SetState(true);
  VarHandle acc = eng->NewVariable();
  double sum = 0;
  for (int i = 1; i <= 1000; ++i)
    eng->PushSync([&sum, i](RunContext) { sum += i; }, cpu, {}, {acc}, FnProperty::kNormal, 0,
                  "accumulate");
  eng->WaitForAll();
  Profiler::Get()->SetState(false);
  std::printf("4. sum of 1..1000 through a chain of 1000 ops = %g; profiler table:\n%s", sum,
              Profiler::Get()->AggregateTable().c_str());
  if (interactive)
    std::printf("\nThe Lua REPL is not built yet; this demo stands in for `make shell`.\n");
  return 0;
}
