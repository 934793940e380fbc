#include "engine/scheduler/engine.h"

#include <mutex>
#include <unordered_set>

#include "engine/base/env.h"
#include "engine/base/error.h"
#include "engine/scheduler/gpu_completion.h"
#include "engine/scheduler/naive_engine.h"
#include "engine/scheduler/profiler.h"
#include "engine/scheduler/threaded_engine.h"
#include "engine/scheduler/var.h"

namespace tessera::engine {
namespace {

EngineType ParseEngineType(const std::string& s) {
  if (s == "threaded") return EngineType::kThreaded;
  if (s == "naive") return EngineType::kNaive;
  TS_THROW << "TESSERA_ENGINE='" << s << "' is not an engine: use 'threaded' or 'naive'";
}

// The process-wide engines are never destroyed: ops and threads may still
// refer to them while static destructors run at exit.
Engine* GlobalEngine(EngineType type) {
  static Engine* threaded = nullptr;
  static Engine* naive = nullptr;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  Engine*& e = type == EngineType::kThreaded ? threaded : naive;
  if (!e) e = CreateEngine(type).release();
  return e;
}

std::atomic<Engine*>& Current() {
  static std::atomic<Engine*> current{nullptr};
  return current;
}

}  // namespace

EngineOptions EngineOptions::FromEnv() {
  EngineOptions o;
  o.cpu_workers = static_cast<int>(EnvInt("TESSERA_CPU_WORKER_NTHREADS", o.cpu_workers));
  o.cpu_priority_workers =
      static_cast<int>(EnvInt("TESSERA_CPU_PRIORITY_NTHREADS", o.cpu_priority_workers));
  o.cpu_copy_workers = static_cast<int>(EnvInt("TESSERA_CPU_COPY_NTHREADS", o.cpu_copy_workers));
  o.gpu_workers = static_cast<int>(EnvInt("TESSERA_GPU_WORKER_NTHREADS", o.gpu_workers));
  o.gpu_copy_workers = static_cast<int>(EnvInt("TESSERA_GPU_COPY_NTHREADS", o.gpu_copy_workers));
  o.gpu_sync_each_op = EnvInt("TESSERA_GPU_SYNC_EACH_OP", 0) != 0;
  InflightBound& b = o.inflight;
  b.ops = EnvInt("TESSERA_ENGINE_MAX_INFLIGHT", b.ops);
  b.host_bytes = EnvInt("TESSERA_ENGINE_MAX_INFLIGHT_BYTES", b.host_bytes);
  b.gpu_bytes = EnvInt("TESSERA_ENGINE_MAX_INFLIGHT_GPU_BYTES", b.gpu_bytes);
  TS_CHECK(b.ops >= 0 && b.host_bytes >= 0 && b.gpu_bytes >= 0)
      << "TESSERA_ENGINE_MAX_INFLIGHT, TESSERA_ENGINE_MAX_INFLIGHT_BYTES and "
         "TESSERA_ENGINE_MAX_INFLIGHT_GPU_BYTES must be >= 0 (0: no bound), got "
      << b.ops << ", " << b.host_bytes << " and " << b.gpu_bytes;
  o.op_threads = static_cast<int>(EnvInt("TESSERA_OMP_THREADS", o.op_threads));
  TS_CHECK(o.op_threads >= 0 && o.op_threads <= 4096)
      << "TESSERA_OMP_THREADS must be within 1..4096 (0: the default), got " << o.op_threads;
  for (int n : {o.cpu_workers, o.cpu_priority_workers, o.cpu_copy_workers, o.gpu_workers,
                o.gpu_copy_workers})
    TS_CHECK(n >= 1 && n <= 256) << "engine worker counts must be within 1..256, got " << n;
  return o;
}

std::unique_ptr<Engine> CreateEngine(EngineType type, const EngineOptions& opts) {
  // Read the profiler's settings here, on the caller's thread: a malformed
  // TESSERA_PROFILER_* value must throw to the user, not on a worker.
  Profiler::Get();
  if (type == EngineType::kNaive) return std::make_unique<NaiveEngine>(opts);
  return std::make_unique<ThreadedEngine>(opts);
}

Engine* Engine::Get() {
  Engine* e = Current().load(std::memory_order_acquire);
  if (e) return e;
  Engine* fresh = GlobalEngine(ParseEngineType(EnvString("TESSERA_ENGINE", "threaded")));
  Current().compare_exchange_strong(e, fresh);
  return Current().load(std::memory_order_acquire);
}

void Engine::SetType(EngineType type) {
  Engine* now = Get();
  if (now->type() == type) return;
  now->WaitForAll();
  Current().store(GlobalEngine(type), std::memory_order_release);
}

const char* Engine::InternName(std::string_view name) {
  static std::mutex mu;
  static auto* names = new std::unordered_set<std::string>();
  std::lock_guard<std::mutex> lock(mu);
  return names->emplace(name).first->c_str();
}

uint64_t Engine::VarVersion(VarHandle var) {
  TS_CHECK(var != nullptr) << "VarVersion: null variable";
  return var->version.load(std::memory_order_acquire);
}

bool Engine::IsSettled(VarHandle var, WaitMode mode) {
  TS_CHECK(var != nullptr) << "IsSettled: null variable";
  ErrorRef err;
  if (!var->Settled(mode == WaitMode::kWrite, &err) || err) return false;
  try {
    return GpuWorkFinished(var);
  } catch (...) {
    return false;  // the wait that follows reports CUDA's error
  }
}

}  // namespace tessera::engine
