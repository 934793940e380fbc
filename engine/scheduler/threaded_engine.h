// The production engine: ready ops go to the worker pool of their device and
// lane; ops that must not wait for a worker (waiters, kAsync, variable
// deletion without work or freeing host memory) run on the thread that makes
// them ready.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <mutex>

#include "engine/scheduler/engine_base.h"
#include "engine/scheduler/worker_pool.h"

namespace tessera::engine {

class ThreadedEngine final : public EngineBase {
 public:
  explicit ThreadedEngine(const EngineOptions& opts);
  ~ThreadedEngine() override;

  EngineType type() const override { return EngineType::kThreaded; }
  EngineStats Stats() const override;

 protected:
  void Submit(Opr* opr, Context ctx, int priority) override;
  void OnReady(OprBlock* blk, const VarEntry* newest) override;
  void HelpWith(VarHandle var) override;
  void HelpWithAll() override;

 private:
  enum Lane { kCompute = 0, kPriority = 1, kCopy = 2, kNumLanes = 3 };
  static constexpr int kMaxGPUs = 64;

  // The pool an op runs on, made on first use; null for ops run inline.
  // Throws for a GPU this build or machine does not have.
  WorkerPool* PoolFor(Context ctx, FnProperty prop, bool has_work);
  WorkerPool* MakePool(int slot, Context ctx, Lane lane);
  void RunInline(OprBlock* blk);

  const EngineOptions opts_;
  std::mutex make_mu_;
  // Slot lane for the CPU, kNumLanes * (1 + gpu id) + lane for a GPU.
  std::array<std::atomic<WorkerPool*>, kNumLanes*(1 + kMaxGPUs)> pools_{};
  std::array<std::unique_ptr<WorkerPool>, kNumLanes*(1 + kMaxGPUs)> owned_;
};

}  // namespace tessera::engine
