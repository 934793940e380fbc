// The debugging engine: every push runs to completion on the pushing thread
// before Push returns, so a failure shows up at the line that caused it.
// Pushes from several threads still respect the variable rule.
#pragma once

#include <array>
#include <mutex>

#include "engine/scheduler/engine_base.h"

namespace tessera::engine {

struct GpuStreamOps;

class NaiveEngine final : public EngineBase {
 public:
  explicit NaiveEngine(const EngineOptions& opts = {});
  ~NaiveEngine() override;  // waits for every op, then drops the streams
  NaiveEngine(const NaiveEngine&) = delete;
  NaiveEngine& operator=(const NaiveEngine&) = delete;

  EngineType type() const override { return EngineType::kNaive; }
  EngineStats Stats() const override;

 protected:
  void Submit(Opr* opr, Context ctx, int priority) override;
  void OnReady(OprBlock* blk, const VarEntry* newest) override;

 private:
  void* StreamFor(Context ctx);  // a GPU context's CUDA stream, made on first use
  std::mutex stream_mu_;
  std::array<void*, 64> streams_{};
  const GpuStreamOps* stream_ops_ = nullptr;  // what made the streams
};

}  // namespace tessera::engine
