// The dependency engine: functions pushed with the variables they read and
// write run asynchronously, on worker threads and device streams, in an order
// that respects one rule: two functions that share a variable, at least one
// of them writing it, run in push order; readers of one version run in
// parallel. The engine knows nothing about tensors: a variable is a token.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "engine/base/context.h"
#include "engine/base/small_vector.h"
#include "engine/scheduler/handles.h"

namespace tessera::engine {

// How and where a pushed function runs beyond its Context.
enum class FnProperty : uint8_t {
  kNormal,          // compute lane of its device
  kCopyFromGPU,     // copy lane of the GPU named by the Context
  kCopyToGPU,       // copy lane of the GPU named by the Context
  kCopyCPU,         // the CPU copy lane (large host copies, I/O staging)
  kCPUPrioritized,  // the CPU priority lane
  kGPUPrioritized,  // the GPU priority lane
  kAsync,           // runs at once on the thread that makes it ready; must return quickly
  kDeleteVar,       // internal: DeleteVariable
};

// Handed to an AsyncFn; calling it ends the op. Call it exactly once, from
// any thread. Passing an exception ends the op as failed.
class CallbackOnComplete {
 public:
  void operator()() const { fn_(engine_, block_, nullptr); }
  void operator()(std::exception_ptr error) const { fn_(engine_, block_, std::move(error)); }

 private:
  friend class EngineBase;
  using Fn = void (*)(void* engine, void* block, std::exception_ptr error);
  CallbackOnComplete(Fn fn, void* engine, void* block) : fn_(fn), engine_(engine), block_(block) {}
  Fn fn_;
  void* engine_;
  void* block_;
};

using SyncFn = std::function<void(RunContext)>;
// An AsyncFn that throws must not have called its callback; the engine then
// ends the op as failed with that exception.
using AsyncFn = std::function<void(RunContext, CallbackOnComplete)>;

// A non-owning list of variables, built from a braced list, a vector or a
// SmallVector without allocating. Duplicates are allowed: a variable named
// twice, or both read and written, is treated as written once.
class VarList {
 public:
  VarList() = default;
  // The braced list lives until the end of the push call: a view is safe
  // there, and VarList is only ever a parameter.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
  VarList(std::initializer_list<VarHandle> l) : data_(l.begin()), size_(l.size()) {}
#pragma GCC diagnostic pop
  VarList(const std::vector<VarHandle>& v) : data_(v.data()), size_(v.size()) {}
  template <size_t N>
  VarList(const SmallVector<VarHandle, N>& v) : data_(v.data()), size_(v.size()) {}
  VarList(const VarHandle* data, size_t size) : data_(data), size_(size) {}
  const VarHandle* begin() const {
    return data_;
  }
  const VarHandle* end() const {
    return data_ + size_;
  }
  size_t size() const {
    return size_;
  }

 private:
  const VarHandle* data_ = nullptr;
  size_t size_ = 0;
};

enum class EngineType { kThreaded, kNaive };
// kRead: wait until every write pushed before has finished (WaitToRead).
// kWrite: wait until every read and write pushed before has finished (WaitToWrite).
enum class WaitMode { kRead, kWrite };

struct LaneStats {
  Context ctx;
  std::string lane;  // "compute", "priority", "copy"
  int workers = 0;
  int64_t queued = 0;   // ready, waiting for a worker
  int64_t running = 0;  // executing now
};
struct EngineStats {
  std::string type;     // "threaded" or "naive"
  int64_t pending = 0;  // pushed and not yet finished, all devices
  std::vector<LaneStats> lanes;
};

// The run-ahead bound: a push from outside the engine's own threads waits
// while `ops` ops are in flight, or while the new memory of the ops in flight
// on its device kind and its own would pass `host_bytes` (ops on a CPU
// context) or `gpu_bytes` (ops on a GPU). 0 turns a bound off.
struct InflightBound {
  int64_t ops = 65536;
  // Host memory run ahead past what the caches hold only makes the workers'
  // writes cold: a stream of 256 KiB adds from Lua took 14 us per op at
  // 32 MiB, 31 us at 256 MiB (docs/engine.md).
  int64_t host_bytes = int64_t{32} << 20;
  // A GPU needs work queued to stay busy; its memory is what to protect.
  int64_t gpu_bytes = int64_t{256} << 20;
  bool operator==(const InflightBound&) const = default;
};

class Engine {
 public:
  // The process-wide engine: TESSERA_ENGINE=threaded|naive, threaded by default.
  static Engine* Get();
  // Waits for all work on the current engine, then makes `type` current.
  static void SetType(EngineType type);
  // Stable storage for a dynamic op name (profiler, error messages).
  static const char* InternName(std::string_view name);
  // Number of writes that have finished on `var`.
  static uint64_t VarVersion(VarHandle var);
  // Without blocking: true when a wait on `var` would return at once with no
  // error (nothing pending it must wait for, not poisoned). Lets a
  // caller skip handing a wait to another thread.
  static bool IsSettled(VarHandle var, WaitMode mode = WaitMode::kRead);

  virtual ~Engine() = default;
  virtual EngineType type() const = 0;

  virtual VarHandle NewVariable() = 0;
  // Deletes `var` after every use pushed before; `delete_fn` (may be empty)
  // runs first, in `ctx`. The handle must not be used afterwards.
  virtual void DeleteVariable(SyncFn delete_fn, Context ctx, VarHandle var) = 0;

  // `name` must outlive the op: a literal or a result of InternName.
  // `bytes`: new memory the op's outputs hold (arrays made for it), counted
  // against the run-ahead bound until the op completes; under 1 KiB it is
  // not counted (the op-count bound covers such ops).
  virtual void PushSync(SyncFn fn, Context ctx, VarList const_vars, VarList mutate_vars,
                        FnProperty prop = FnProperty::kNormal, int priority = 0,
                        const char* name = nullptr, size_t bytes = 0) = 0;
  virtual void PushAsync(AsyncFn fn, Context ctx, VarList const_vars, VarList mutate_vars,
                         FnProperty prop = FnProperty::kNormal, int priority = 0,
                         const char* name = nullptr, size_t bytes = 0) = 0;

  // Runs `fn` now, on the calling thread, when its variables are free: no
  // write pending on `const_vars` and nothing pending on `mutate_vars`. They
  // are held as by a pushed op meanwhile (each once, a write winning over a
  // read of the same variable), so work pushed on them from other threads
  // queues behind it. Returns false, running nothing, when they are not free
  // (or poisoned, or deleted, or the profiler is recording): the caller then
  // pushes. An exception from `fn` poisons `mutate_vars`
  // and is reported at the next wait, as a pushed op's would be. For tiny
  // ops whose push would cost more than their work; `fn` must not wait.
  template <typename F>
  bool TryRunNow(F&& fn, VarList const_vars, VarList mutate_vars, const char* name) {
    auto call = [](void* f) { (*static_cast<std::remove_reference_t<F>*>(f))(); };
    return TryRunNowImpl(call, &fn, const_vars, mutate_vars, name);
  }

  // A reusable operator: its variable lists are normalised once.
  virtual OprHandle NewOperator(AsyncFn fn, VarList const_vars, VarList mutate_vars,
                                FnProperty prop = FnProperty::kNormal,
                                const char* name = nullptr) = 0;
  virtual void Push(OprHandle op, Context ctx, int priority = 0) = 0;
  // Frees the operator once every push of it has finished.
  virtual void DeleteOperator(OprHandle op) = 0;

  // Waits, and rethrows the error of a failed op that poisoned `var`: at
  // every wait, until an op writes `var` successfully.
  virtual void WaitForVar(VarHandle var, WaitMode mode = WaitMode::kRead) = 0;
  // Waits for every pushed op; rethrows the first error not yet reported.
  virtual void WaitForAll() = 0;
  // WaitForAll when every pushed op has finished (the GPU work they queued
  // is waited for and unreported errors rethrown, as WaitForAll does);
  // otherwise false, having waited for nothing. For a thread that must not
  // block on ops, which may need it (the shell's interpreter): a wait with
  // nothing pending then costs no hand-over to a helper thread.
  virtual bool WaitForAllIfIdle() = 0;
  // Without blocking: calls `fn` once every op pushed before on `vars` has
  // finished (kWrite) or every write pushed before (kRead, what a reader
  // waits for), on the thread that finishes the last of them (or at once),
  // with the error of a failed op that poisoned one of them (claimed: it is
  // not reported again; `fn` gets the only reference) or null. `fn` must
  // return quickly and must not throw.
  // Ops that run code outside the engine (Lua custom ops) end with it; the
  // shell's waits, which must keep serving Lua meanwhile, wait on it.
  virtual void NotifyWhenSettled(VarList vars, std::function<void(std::exception_ptr)> fn,
                                 WaitMode mode = WaitMode::kWrite) = 0;

  // The run-ahead bound (InflightBound, above). It never waits when
  // nothing is in flight, on an engine thread, or inside an op's code (which
  // the ops in flight may be waiting for); a thread that serves work
  // (ThreadBlocking) serves while it waits.
  virtual void SetMaxInflight(const InflightBound& bound) = 0;
  virtual InflightBound MaxInflight() const = 0;

  // How a thread that must keep serving work blocks in the run-ahead bound
  // (the Lua interpreter, which runs Lua ops for the engine): `block(done)`
  // returns once done() holds, serving meanwhile (and may throw, say on
  // Ctrl-C: the push then fails and changes nothing); `wake()`, from any
  // thread, makes it look at done() again. Set per thread (null: park).
  struct ThreadBlocking {
    std::function<void(const std::function<bool()>& done)> block;
    std::function<void()> wake;
  };
  static void SetThreadBlocking(const ThreadBlocking* blocking);
  virtual EngineStats Stats() const = 0;
  // OpenMP threads a CPU op should use so that workers x threads does not
  // oversubscribe the cores: what RunContext::omp_threads carries to kernels.
  virtual int OpThreads() const = 0;

 protected:
  virtual bool TryRunNowImpl(void (*call)(void*), void* fn, VarList const_vars, VarList mutate_vars,
                             const char* name) = 0;
};

// Worker counts and limits. FromEnv reads TESSERA_CPU_WORKER_NTHREADS,
// TESSERA_CPU_PRIORITY_NTHREADS, TESSERA_CPU_COPY_NTHREADS,
// TESSERA_GPU_WORKER_NTHREADS, TESSERA_GPU_COPY_NTHREADS and
// TESSERA_ENGINE_MAX_INFLIGHT*; docs/DEVELOPING.md gives the defaults.
struct EngineOptions {
  int cpu_workers = 1;
  int cpu_priority_workers = 1;
  int cpu_copy_workers = 1;
  int gpu_workers = 2;  // per GPU, each with its own stream
  int gpu_copy_workers = 1;
  // A GPU op completes once its kernels are queued, an event behind them
  // (gpu_completion.h); TESSERA_GPU_SYNC_EACH_OP=1 makes each wait for its
  // stream instead, as CUDA_LAUNCH_BLOCKING localises a failing kernel.
  bool gpu_sync_each_op = false;
  // The run-ahead bound (SetMaxInflight): TESSERA_ENGINE_MAX_INFLIGHT ops,
  // TESSERA_ENGINE_MAX_INFLIGHT_BYTES and TESSERA_ENGINE_MAX_INFLIGHT_GPU_BYTES.
  InflightBound inflight;
  // OpenMP threads per CPU op (TESSERA_OMP_THREADS); 0: the cores divided
  // among the CPU compute workers (all of them for the naive engine).
  int op_threads = 0;
  static EngineOptions FromEnv();
};

// A private engine (tests, benchmarks). Destroying it waits for its work and
// joins its threads.
std::unique_ptr<Engine> CreateEngine(EngineType type,
                                     const EngineOptions& opts = EngineOptions::FromEnv());

}  // namespace tessera::engine
