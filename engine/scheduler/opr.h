// The engine's internal op records. An Opr is what was pushed (function,
// normalised variable lists, properties); an OprBlock is one pending
// execution of it, counting the variables it still waits for.
//
// Both are written by the pushing thread and read by the worker that runs
// the op, so every cache line they span crosses between cores on every push:
// they are kept small. A push of a persistent operator touches the block's
// first two lines; a temporary op, which lives inside its block, four.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <new>
#include <span>

#include "engine/scheduler/engine.h"
#include "engine/scheduler/var.h"

namespace tessera::engine {

class WorkerPool;
class Parker;
struct OprBlock;
struct PushGroupState;

// The variables of an op, normalised: writes, then reads; each list sorted
// by address, without duplicates, and the two disjoint. A variable named as
// both read and written is queued as a write and marked as read too: it is
// updated, not overwritten (see EngineBase's poison rule). Short lists
// (nearly all) live inline.
class OprVars {
 public:
  OprVars() = default;
  OprVars(const OprVars&) = delete;
  OprVars& operator=(const OprVars&) = delete;
  ~OprVars() { Release(); }

  // Room for `n` variables, to be filled with the writes, then the reads,
  // and closed by Fill.
  VarHandle* Reserve(size_t n) {
    Release();
    if (n > kInline) data_ = new VarHandle[n];
    return data_;
  }
  // `updated`: bit i set when writes()[i] is read too (for a write past the
  // 32nd, bit 31 stands for all of them). Counts fit 16 bits: the lists are
  // checked when the op is made (MaxVars).
  void Fill(size_t n_writes, size_t n_reads, uint32_t updated) {
    n_writes_ = static_cast<uint16_t>(n_writes);
    n_reads_ = static_cast<uint16_t>(n_reads);
    updated_ = updated;
  }
  static constexpr size_t kMaxVars = 65535;
  std::span<VarHandle const> writes() const { return {data_, n_writes_}; }
  std::span<VarHandle const> reads() const { return {data_ + n_writes_, n_reads_}; }
  size_t size() const { return n_writes_ + n_reads_; }
  bool updated(size_t write_index) const {
    return updated_ >> std::min<size_t>(write_index, 31) & 1;
  }
  uint32_t updated_bits() const { return updated_; }

 private:
  static constexpr size_t kInline = 6;
  void Release() {
    if (data_ != inline_) delete[] data_;
    data_ = inline_;
  }
  VarHandle* data_ = inline_;
  // Small, so that the op record keeps to its cache lines (opr.h's header).
  uint16_t n_writes_ = 0, n_reads_ = 0;
  uint32_t updated_ = 0;
  VarHandle inline_[kInline];
};

class Opr {
 public:
  Opr() : sync_fn_() {}
  Opr(const Opr&) = delete;
  Opr& operator=(const Opr&) = delete;
  ~Opr() {
    if (is_async_)
      async_fn_.~AsyncFn();
    else
      sync_fn_.~SyncFn();
  }

  // One function, sync or async, in one slot.
  void SetSync(SyncFn fn) { sync_fn_ = std::move(fn); }
  void SetAsync(AsyncFn fn) {
    sync_fn_.~SyncFn();
    new (&async_fn_) AsyncFn(std::move(fn));
    is_async_ = true;
  }
  bool is_async() const { return is_async_; }
  // A sync op without a function only orders its variables.
  bool has_fn() const { return is_async_ || sync_fn_; }
  const SyncFn& sync_fn() const { return sync_fn_; }
  const AsyncFn& async_fn() const { return async_fn_; }

  OprVars vars;
  const char* name = "unnamed";
  // Persistent operators without variables: one for the handle plus one per
  // push in flight, on a cache line of its own (pushers and workers both
  // write it). An operator with variables needs no count: its deletion is
  // an op on all of them, which runs after every push. Null otherwise.
  struct alignas(64) RefCount {
    std::atomic<int> n{1};
  };
  std::unique_ptr<RefCount> refs;
  // The block a temporary op (made by PushSync/PushAsync, freed after its
  // run) lives in: one allocation per push. Null for persistent operators.
  OprBlock* home = nullptr;
  FnProperty prop = FnProperty::kNormal;
  bool always_run = false;  // waiters and deletions run even on poisoned variables

 private:
  bool is_async_ = false;

 public:
  // New memory of its outputs in KiB, rounded up (the run-ahead bound);
  // 32 bits in the padding after the three flags, so the record does not
  // grow (asserted below the class).
  uint32_t inflight_kib = 0;

 private:
  union {
    SyncFn sync_fn_;
    AsyncFn async_fn_;
  };
};

static_assert(sizeof(Opr) <= 128, "Opr: keep the record to two cache lines (see the top)");

// The naive engine's pushing thread waits on these.
struct NaiveWait {
  Parker* pusher = nullptr;
  std::atomic<bool> ready{false}, done{false};
};

struct alignas(64) OprBlock {
  // Leaves temp_storage_ alone: a pooled block is not zeroed on reuse.
  OprBlock() {}
  OprBlock(const OprBlock&) = delete;
  OprBlock& operator=(const OprBlock&) = delete;
  ~OprBlock() {
    if (owns_temp_) temp_opr()->~Opr();
  }

  // The temporary op that lives in this block, made on first call.
  Opr* MakeTempOpr() {
    owns_temp_ = true;
    Opr* op = new (temp_storage_) Opr();
    op->home = this;
    return op;
  }

  // ---- first line: what running and completing the op reads ----
  std::atomic<int> wait{0};  // variables not yet granted, plus one while pushing
  int priority = 0;
  Opr* opr = nullptr;
  Context ctx;
  WorkerPool* pool = nullptr;  // where it runs; null for inline ops
  NaiveWait* naive = nullptr;  // naive engine only
  uint64_t begin_ns = 0;       // profiler, async ops: set when the op started
  const char* lane = "";       // profiler, async ops
  uint32_t thread = 0;         // profiler, async ops

 private:
  bool owns_temp_ = false;

 public:
  VarEntry entries[2];              // queue places for the op's first two variables
  PushGroupState* group = nullptr;  // the PushGroup the op joined; null: none

 private:
  Opr* temp_opr() { return std::launder(reinterpret_cast<Opr*>(temp_storage_)); }
  // On lines of its own: the op's lists and its function do not straddle a line.
  alignas(64) unsigned char temp_storage_[sizeof(Opr)];
};

}  // namespace tessera::engine
