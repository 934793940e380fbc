#include "engine/scheduler/engine_base.h"

#include <algorithm>
#include <bit>

#include "engine/base/error.h"
#include "engine/base/host_sync.h"
#include "engine/base/thread_state.h"
#include "engine/scheduler/gpu_completion.h"
#include "engine/scheduler/gpu_streams.h"
#include "engine/scheduler/hold.h"
#include "engine/scheduler/object_pool.h"
#include "engine/scheduler/parker.h"
#include "engine/scheduler/profiler.h"
#include "engine/scheduler/push_group_internal.h"
#include "engine/scheduler/var.h"
#include "engine/scheduler/worker_pool.h"

namespace tessera::engine {
namespace {

// The op the calling thread is executing, to refuse waits that would wait
// for the op itself.
thread_local const Opr* tls_current_op = nullptr;
// The async op whose function the calling thread is in: its callback, called
// right there, completes it as a sync op's end would.
thread_local const OprBlock* tls_running_async = nullptr;

// Marks user code running: waits check against it (a hold), and no op may
// be handed off to this thread meanwhile.
struct CurrentOpScope {
  const Opr* saved;
  WorkerPool::HandOffScope no_handoff{false};
  HoldScope hold;
  explicit CurrentOpScope(const Opr* op) : saved(tls_current_op), hold(op) {
    tls_current_op = op;
    ++OpDepth();
  }
  ~CurrentOpScope() {
    tls_current_op = saved;
    --OpDepth();
  }
};

// Null, or used after DeleteVariable: a variable no op may name.
bool Unusable(VarHandle v) {
  return !v || v->deleted.load(std::memory_order_relaxed);
}

// The normal form of an op's variables, as every push and every run on the
// calling thread sees them: the writes, then the reads, at `out` (room for
// both lists); each list sorted and without duplicates, and the reads
// without what is also written (a variable named twice, or read and
// written, is written once, and marked in `*updated` as in OprVars::Fill).
// Returns the two counts.
struct NormalVars {
  size_t n_writes, n_reads;
  uint32_t updated;
};
// Sorts [first, first + n) and drops repeats; returns the new count. Most
// ops name one or two variables per list: those take no call.
[[gnu::always_inline]] inline size_t SortUnique(VarHandle* first, size_t n) {
  if (n < 2) return n;
  if (n == 2) {
    if (first[0] == first[1]) return 1;
    if (first[1] < first[0]) std::swap(first[0], first[1]);
    return 2;
  }
  std::sort(first, first + n);
  return static_cast<size_t>(std::unique(first, first + n) - first);
}

// The index of `v` in the sorted writes, or n_writes.
[[gnu::always_inline]] inline size_t FindWrite(const VarHandle* writes, size_t n_writes,
                                               VarHandle v) {
  if (n_writes <= 4) {  // the usual case: a scan beats a binary search
    for (size_t i = 0; i < n_writes; ++i)
      if (writes[i] == v) return i;
    return n_writes;
  }
  const VarHandle* w = std::lower_bound(writes, writes + n_writes, v);
  return w != writes + n_writes && *w == v ? static_cast<size_t>(w - writes) : n_writes;
}

// Inline in its two callers, the push and the run on the calling thread: a
// call costs as much as the work for the usual one or two variables.
[[gnu::always_inline]] inline NormalVars NormaliseVars(VarList const_vars, VarList mutate_vars,
                                                       VarHandle* out) {
  size_t n_writes = 0, n_reads = 0;
  uint32_t updated = 0;
  for (VarHandle v : mutate_vars) out[n_writes++] = v;
  n_writes = SortUnique(out, n_writes);
  VarHandle* r = out + n_writes;
  for (VarHandle v : const_vars) {
    const size_t w = FindWrite(out, n_writes, v);
    if (w != n_writes)
      updated |= uint32_t{1} << std::min<size_t>(w, 31);
    else
      r[n_reads++] = v;
  }
  n_reads = SortUnique(r, n_reads);
  TS_DCHECK(std::adjacent_find(out, out + n_writes, std::greater_equal<>()) == out + n_writes);
  TS_DCHECK(std::adjacent_find(r, r + n_reads, std::greater_equal<>()) == r + n_reads);
  return {n_writes, n_reads, updated};
}

// Bytes as whole KiB, rounded up (what an op record keeps). Outputs under
// 1 KiB are not counted: their accounting (an atomic add at the push and a
// subtract at completion, on a line both threads write) cost about 5% of a
// one-element `c = a + b`, and the op-count bound already caps them (65536
// ops in flight by default: at most 64 MiB).
uint32_t KiB(size_t bytes) {
  if (bytes < 1024) return 0;
  return static_cast<uint32_t>(std::min<size_t>((bytes + 1023) >> 10, UINT32_MAX));
}

// A push's variables, checked (a null or deleted one is the caller's
// mistake) and normalised into the op.
void Normalise(Opr* op, VarList const_vars, VarList mutate_vars) {
  TS_CHECK(const_vars.size() + mutate_vars.size() <= OprVars::kMaxVars)
      << "engine op '" << op->name << "': " << const_vars.size() + mutate_vars.size()
      << " variables; at most " << OprVars::kMaxVars;
  for (VarList list : {const_vars, mutate_vars}) {
    for (VarHandle v : list) {
      TS_CHECK(v != nullptr) << "engine op '" << op->name << "': null variable";
      TS_CHECK(!Unusable(v)) << "engine op '" << op->name
                             << "': variable used after DeleteVariable";
    }
  }
  VarHandle* out = op->vars.Reserve(const_vars.size() + mutate_vars.size());
  const NormalVars n = NormaliseVars(const_vars, mutate_vars, out);
  op->vars.Fill(n.n_writes, n.n_reads, n.updated);
}

// The poison rule. A failed op poisons every variable it writes with its
// error; reported or not, the error stays until an op writes the variable
// successfully, so a poisoned array never reads back stale memory. An op
// that reads a poisoned variable (or updates one: reads and writes it) is
// skipped and poisons what it writes in turn; an op that only writes one
// overwrites it, runs, and cleans it. Callers that write part of an array
// (a view, an accumulation) list it as read too.
//
// The error of a failed op that wrote `v`, when there is one. Read only by
// an op holding the variable (see Var::error).
const ErrorRef& PoisonOf(VarHandle v) {
  return v->error;
}

// Rethrows a poisoned variable's error at a wait, marking it shown.
void RethrowPoison(const ErrorRef& err) {
  if (!err) return;
  err->Claim();
  err->Rethrow();
}

ErrorRef FindPoison(const Opr* op) {
  for (VarHandle v : op->vars.reads())
    if (const ErrorRef& e = PoisonOf(v)) return e;
  const auto writes = op->vars.writes();
  for (size_t i = 0; i < writes.size(); ++i)
    if (op->vars.updated(i))
      if (const ErrorRef& e = PoisonOf(writes[i])) return e;
  return nullptr;
}

// What a finished op leaves in the variables it wrote: its error (they are
// poisoned), or, after a real write that succeeded, no error (a successful
// write replaces the bad value). Waiters change nothing.
[[gnu::noinline]] void Poison(std::span<const VarHandle> writes, const ErrorRef& err) {
  for (VarHandle v : writes) v->error = err;
}
inline void PublishOutcome(std::span<const VarHandle> writes, const ErrorRef& err,
                           bool real_write) {
  if (err) [[unlikely]] {
    Poison(writes, err);
  } else if (real_write) {
    for (VarHandle v : writes)
      if (v->error) [[unlikely]]
        v->error.reset();
  }
}

}  // namespace

// ---- owning a new op until the engine has it --------------------------------

// Frees the op it holds unless released: an op that the engine never took
// (its push threw) does not leak, whatever threw.
class EngineBase::OprOwner {
 public:
  explicit OprOwner(Opr* op) : op_(op) {}
  ~OprOwner() {
    if (op_) FreeOpr(op_);
  }
  OprOwner(const OprOwner&) = delete;
  OprOwner& operator=(const OprOwner&) = delete;
  Opr* operator->() const { return op_; }
  Opr* get() const { return op_; }
  void release() { op_ = nullptr; }

 private:
  Opr* op_;
};

void EngineBase::SubmitNew(OprOwner& op, Context ctx, int priority) {
  Submit(op.get(), ctx, priority);  // takes the op, or throws having changed nothing
  op.release();
}

// ---- variables and ops -----------------------------------------------------

VarHandle EngineBase::NewVariable() {
  return ObjectPool<Var>::New();
}

Opr* EngineBase::NewTempOpr(VarList const_vars, VarList mutate_vars, FnProperty prop,
                            const char* name, bool persistent) {
  OprOwner op(persistent ? ObjectPool<Opr>::New() : ObjectPool<OprBlock>::New()->MakeTempOpr());
  op->prop = prop;
  op->name = name ? name : "unnamed";
  Normalise(op.get(), const_vars, mutate_vars);
  Opr* made = op.get();
  op.release();
  return made;
}

void EngineBase::FreeOpr(Opr* op) {
  if (op->home)
    ObjectPool<OprBlock>::Delete(op->home);
  else
    ObjectPool<Opr>::Delete(op);
}

void EngineBase::PushSync(SyncFn fn, Context ctx, VarList const_vars, VarList mutate_vars,
                          FnProperty prop, int priority, const char* name, size_t bytes) {
  OprOwner op(NewTempOpr(const_vars, mutate_vars, prop, name));
  op->SetSync(std::move(fn));
  op->inflight_kib = KiB(bytes);
  SubmitNew(op, ctx, priority);
}

void EngineBase::PushAsync(AsyncFn fn, Context ctx, VarList const_vars, VarList mutate_vars,
                           FnProperty prop, int priority, const char* name, size_t bytes) {
  TS_CHECK(fn) << "engine op '" << (name ? name : "unnamed") << "': empty async function";
  OprOwner op(NewTempOpr(const_vars, mutate_vars, prop, name));
  op->SetAsync(std::move(fn));
  op->inflight_kib = KiB(bytes);
  SubmitNew(op, ctx, priority);
}

OprHandle EngineBase::NewOperator(AsyncFn fn, VarList const_vars, VarList mutate_vars,
                                  FnProperty prop, const char* name) {
  TS_CHECK(fn) << "engine op '" << (name ? name : "unnamed") << "': empty async function";
  Opr* op = NewTempOpr(const_vars, mutate_vars, prop, name, /*persistent=*/true);
  op->SetAsync(std::move(fn));
  if (op->vars.size() == 0) op->refs = std::make_unique<Opr::RefCount>();
  return op;
}

void EngineBase::Push(OprHandle op, Context ctx, int priority) {
  TS_CHECK(op != nullptr) << "Push: null operator";
  for (auto list : {op->vars.reads(), op->vars.writes()})
    for (VarHandle v : list)
      TS_CHECK(!v->deleted.load(std::memory_order_relaxed))
          << "engine op '" << op->name << "': variable used after DeleteVariable";
  if (op->refs) op->refs->n.fetch_add(1, std::memory_order_relaxed);
  try {
    Submit(op, ctx, priority);
  } catch (...) {
    if (op->refs) op->refs->n.fetch_sub(1, std::memory_order_relaxed);
    throw;
  }
}

void EngineBase::DeleteOperator(OprHandle op) {
  TS_CHECK(op != nullptr) << "DeleteOperator: null operator";
  if (op->refs) {
    if (op->refs->n.fetch_sub(1, std::memory_order_acq_rel) == 1) FreeOpr(op);
    return;
  }
  // Writing every variable of the operator, the deletion runs after each of
  // its pushes (MXNet's way), and needs no worker.
  SmallVector<VarHandle, 8> all(op->vars.reads().begin(), op->vars.reads().end());
  for (VarHandle v : op->vars.writes()) all.push_back(v);
  OprOwner del(NewTempOpr({}, all, FnProperty::kAsync, "DeleteOperator"));
  del->SetSync([op](RunContext) { FreeOpr(op); });
  del->always_run = true;  // also after a failed push; changes no variable
  SubmitNew(del, Context::CPU(), 0);
}

void EngineBase::DeleteVariable(SyncFn delete_fn, Context ctx, VarHandle var) {
  TS_CHECK(var != nullptr) << "DeleteVariable: null variable";
  // Nothing queued on the variable (the common end of an array whose results
  // were used long ago): free it now instead of queueing an op that would be
  // ready at once. Host frees only: a device free may have to wait for it.
  if ((!delete_fn || ctx.dev_type == DeviceType::kCPU) && var->Retire()) {
    if (delete_fn) {
      try {
        delete_fn(RunContext{ctx, nullptr, op_threads_});
      } catch (...) {
        RecordError(MakeErrorRecord(std::current_exception(), "DeleteVariable"));
      }
    }
    ObjectPool<Var>::Delete(var);
    return;
  }
  OprOwner op(NewTempOpr({}, {var}, FnProperty::kDeleteVar, "DeleteVariable"));
  op->SetSync(std::move(delete_fn));
  op->always_run = true;  // a poisoned array's memory goes back to the pool too
  var->deleted.store(true, std::memory_order_relaxed);
  try {
    SubmitNew(op, ctx, 0);
  } catch (...) {
    var->deleted.store(false, std::memory_order_relaxed);  // still usable: the push failed
    throw;
  }
}

OprBlock* EngineBase::NewBlock(Opr* opr, Context ctx, int priority) {
  OprBlock* blk = opr->home ? opr->home : ObjectPool<OprBlock>::New();
  blk->opr = opr;
  blk->ctx = ctx;
  blk->priority = priority;
  blk->group = JoinCurrentPushGroup();
  return blk;
}

bool EngineBase::AppendToVars(OprBlock* blk) {
  const Opr* op = blk->opr;
  auto reads = op->vars.reads(), writes = op->vars.writes();
  // One extra count, held while appending, keeps the op from becoming ready
  // (and being freed by a worker) before this loop ends.
  blk->wait.store(static_cast<int>(op->vars.size()) + 1, std::memory_order_relaxed);
  pushed_.fetch_add(1);
  // Every variable's push lock, in address order, before the first append
  // (see Var::LockPush): the two sorted, disjoint lists merged.
  auto in_address_order = [&](auto fn) {
    size_t r = 0, w = 0;
    [[maybe_unused]] VarHandle previous = nullptr;
    while (r < reads.size() || w < writes.size()) {
      VarHandle v = w == writes.size() || (r < reads.size() && reads[r] < writes[w]) ? reads[r++]
                                                                                     : writes[w++];
      TS_DCHECK(v > previous);  // the lock order: strictly increasing addresses
      previous = v;
      fn(v);
    }
  };
  in_address_order([](VarHandle v) { v->LockPush(); });
  if (Holding()) MarkIfBehindHold(reads, writes);  // pushed inside a running op
  int granted = 1, i = 0;
  auto spare = [&] { return i < 2 ? &blk->entries[i++] : nullptr; };
  for (VarHandle v : reads) granted += v->AppendRead(blk, spare());
  for (VarHandle v : writes) granted += v->AppendWrite(blk, spare());
  for (VarHandle v : reads) v->UnlockPush();
  for (VarHandle v : writes) v->UnlockPush();
  const int before = blk->wait.fetch_sub(granted, std::memory_order_acq_rel);
  TS_DCHECK(before >= granted);  // a wait count never goes negative
  return before == granted;
}

// ---- running and completing ------------------------------------------------

void EngineBase::Execute(OprBlock* blk, const RunContext& rctx, const char* lane) {
  Opr* op = blk->opr;
  if (!op->always_run) {
    if (ErrorRef poison = FindPoison(op)) {  // skip, and pass the poison on
      WorkerPool::HandOffScope handoff(true);
      Complete(blk, std::move(poison), false);
      return;
    }
  }
  Profiler* prof = Profiler::Get();
  const bool profiling = prof->enabled();
  if (profiling) {
    blk->begin_ns = Profiler::NowNs();
    blk->thread = Profiler::ThreadIndex();
  }
  RunContext run{blk->ctx, rctx.stream, op_threads_};
  if (!op->is_async()) {
    ErrorRef err;
    {
      CurrentOpScope scope(op);
      try {
        TS_CHECK(!run.ctx.is_gpu() || run.stream || !op->sync_fn() ||
                 op->prop == FnProperty::kAsync)
            << run.ctx.ToString() << ": the " << lane
            << " worker running this op has no CUDA stream (making it failed; see the log)";
        // A deleted variable's memory may go to any stream or to the host next.
        WaitForQueuedGpuWork(op->vars.reads(), op->vars.writes(),
                             op->prop == FnProperty::kDeleteVar ? nullptr : run.stream);
        if (op->sync_fn()) op->sync_fn()(run);
      } catch (...) {
        err = MakeErrorRecord(std::current_exception(), op->name);
      }
      if (run.ctx.is_gpu() && run.stream) EndOnStream(op, run, profiling, &err);
    }
    if (profiling)
      prof->RecordOp(op->name, blk->ctx, lane, blk->thread, blk->begin_ns, Profiler::NowNs());
    WorkerPool::HandOffScope handoff(true);  // the op's code has returned
    Complete(blk, std::move(err), true);
  } else {
    if (profiling) blk->lane = lane;
    CurrentOpScope scope(op);
    const OprBlock* saved = tls_running_async;
    tls_running_async = blk;
    try {
      // Waiters (always_run) hand the GPU's work to the thread that waits.
      if (!op->always_run) WaitForQueuedGpuWork(op->vars.reads(), op->vars.writes(), nullptr);
      op->async_fn()(run, CallbackOnComplete(&EngineBase::OnAsyncDone, this, blk));
    } catch (...) {
      tls_running_async = saved;
      Complete(blk, MakeErrorRecord(std::current_exception(), op->name), true);
      return;
    }
    const bool ended_here = tls_running_async == nullptr;  // see OnAsyncDone
    tls_running_async = saved;
    if (ended_here) ObjectPool<OprBlock>::Delete(blk);
  }
}

namespace {
// The ops that run kernels on a compute stream (not copies).
bool IsComputeOnStream(FnProperty prop) {
  return prop == FnProperty::kNormal || prop == FnProperty::kGPUPrioritized;
}
}  // namespace

bool EngineBase::CompletesOnEvent(const Opr* op, bool profiling) const {
  // Profiled ops wait for their streams, so that their times are the kernels'.
  const GpuStreamOps* ops = GpuStreams();
  return gpu_event_completion_ && !profiling && ops && ops->record && IsComputeOnStream(op->prop);
}

void EngineBase::EndOnStream(const Opr* op, const RunContext& run, bool profiling, ErrorRef* err) {
  try {
    if (!*err && CompletesOnEvent(op, profiling)) {
      MarkQueuedGpuWork(op->vars.reads(), op->vars.writes(), run.stream);
      gpu_devices_queued_.fetch_or(uint64_t{1} << (run.ctx.dev_id & 63), std::memory_order_relaxed);
      return;
    }
    // After a throw too: what the op queued before it failed must finish
    // before its variables are released and its inputs perhaps freed.
    // A compute op that waits outside the profiler (TESSERA_GPU_SYNC_EACH_OP)
    // is a host synchronisation (host_sync.h); copies report their own.
    const bool reported = !*err && !profiling && IsComputeOnStream(op->prop);
    const uint64_t begin_ns = reported ? Profiler::NowNs() : 0;
    GpuStreams()->sync(run.stream);
    if (reported) ReportHostSync(op->name ? op->name : "unnamed", Profiler::NowNs() - begin_ns);
    ClearQueuedGpuWork(op->vars.writes());
  } catch (...) {
    if (!*err) *err = MakeErrorRecord(std::current_exception(), op->name);
  }
}

void EngineBase::OnAsyncDone(void* engine, void* block, std::exception_ptr error) {
  auto* self = static_cast<EngineBase*>(engine);
  auto* blk = static_cast<OprBlock*>(block);
  if (blk->begin_ns)
    Profiler::Get()->RecordOp(blk->opr->name, blk->ctx, blk->lane, blk->thread, blk->begin_ns,
                              Profiler::NowNs());
  ErrorRef err = error ? MakeErrorRecord(error, blk->opr->name) : nullptr;
  if (blk != tls_running_async) {
    self->Complete(blk, std::move(err), true);
    return;
  }
  // Ended inside its own function: the op it makes ready may be kept for
  // this worker, as after a sync op (should the function wait before it
  // returns, BlockUntil queues that op first). The block, which holds the
  // function of a temporary op, is freed once the function has returned.
  tls_running_async = nullptr;
  WorkerPool::HandOffScope handoff(true);
  self->Complete(blk, std::move(err), true, /*free_block=*/false);
}

void EngineBase::Complete(OprBlock* blk, ErrorRef err, bool new_error, bool free_block) {
  Opr* op = blk->opr;
  TS_DCHECK(blk->wait.load(std::memory_order_relaxed) == 0);  // it held every variable
  const bool real_op = !op->always_run;  // waiters leave variables as they were
  PublishOutcome(op->vars.writes(), err, real_op);
  if (err && new_error) RecordError(err);
  auto grant = [this](OprBlock* b, const VarEntry* newest) { Grant(b, newest); };
  for (VarHandle v : op->vars.reads()) v->CompleteRead(grant);
  for (VarHandle v : op->vars.writes()) v->CompleteWrite(grant, real_op);
  if (op->prop == FnProperty::kDeleteVar)
    for (VarHandle v : op->vars.writes()) ObjectPool<Var>::Delete(v);
  // A temporary op is freed with its block, below.
  if (op->refs && op->refs->n.fetch_sub(1, std::memory_order_acq_rel) == 1) FreeOpr(op);
  NaiveWait* naive = blk->naive;
  const size_t bytes = size_t{op->inflight_kib} << 10;  // the op may live in the block
  const MemKind kind = KindOf(blk->ctx);
  PushGroupState* group = blk->group;
  if (free_block) ObjectPool<OprBlock>::Delete(blk);
  OpFinished(bytes, kind);
  if (group) LeavePushGroup(group, err);
  if (naive) {
    Parker* pusher = naive->pusher;  // `naive` may be gone once `done` is set
    naive->done.store(true, std::memory_order_release);
    pusher->Unpark();
  }
}

// ---- running on the calling thread -----------------------------------------

bool EngineBase::HoldNow(std::span<const VarHandle> reads, std::span<const VarHandle> writes,
                         uint32_t updated, VarEntry* entries) {
  size_t r = 0, w = 0;
  bool free = true;
  for (; free && r < reads.size(); ++r) {
    if (!reads[r]->TryHoldRead()) break;
    free = !PoisonOf(reads[r]);
  }
  if (r < reads.size() || !free) {
    ReleaseNow(reads.first(r), {}, false);
    return false;
  }
  for (; free && w < writes.size(); ++w) {
    if (!writes[w]->TryHoldWrite(&entries[w])) break;
    free = !(updated >> std::min<size_t>(w, 31) & 1) || !PoisonOf(writes[w]);
  }
  if (w < writes.size() || !free) {
    ReleaseNow(reads, writes.first(w), false);
    return false;
  }
  return true;
}

void EngineBase::ReleaseNow(std::span<const VarHandle> reads, std::span<const VarHandle> writes,
                            bool wrote) {
  auto grant = [this](OprBlock* b, const VarEntry* newest) { Grant(b, newest); };
  for (VarHandle v : reads) v->CompleteRead(grant);
  for (VarHandle v : writes) v->CompleteWrite(grant, wrote);
}

bool EngineBase::TryRunNowImpl(void (*call)(void*), void* fn, VarList const_vars,
                               VarList mutate_vars, const char* name) {
  if (const_vars.size() > kMaxReadsNow || mutate_vars.size() > kMaxWritesNow) return false;
  if (Profiler::Get()->enabled()) return false;  // a pushed op shows in the trace
  // Null or deleted variables are left to the push, which reports them.
  for (VarList list : {const_vars, mutate_vars})
    for (VarHandle v : list)
      if (Unusable(v)) return false;
  // Each variable once, as a push normalises them (`a * a` reads a twice).
  VarHandle vars[kMaxReadsNow + kMaxWritesNow];
  const NormalVars n = NormaliseVars(const_vars, mutate_vars, vars);
  const std::span<const VarHandle> writes(vars, n.n_writes), reads(vars + n.n_writes, n.n_reads);
  // Poisoned variables too are left to the push, which skips the op.
  VarEntry entries[kMaxWritesNow];
  if (!HoldNow(reads, writes, n.updated, entries)) return false;
  ErrorRef err;
  try {
    WaitForQueuedGpuWork(reads, writes, nullptr);
    call(fn);
  } catch (...) {
    err = MakeErrorRecord(std::current_exception(), name ? name : "unnamed");
  }
  PublishOutcome(writes, err, true);
  if (err) RecordError(err);
  ReleaseNow(reads, writes, true);
  return true;
}

bool EngineBase::RunPushedNow(Opr* op, Context ctx) {
  // Everything a queued run does beyond the function and the grants is
  // left to it: async ends, streams, waiters and deletions, the profiler's
  // events, groups. The run-ahead bound has nothing to count: the op has
  // run when its push returns.
  if (op->is_async() || ctx.is_gpu() || op->always_run || op->prop == FnProperty::kDeleteVar ||
      op->vars.writes().size() > kMaxWritesNow || tls_push_group || Profiler::Get()->enabled())
    return false;
  const auto reads = op->vars.reads(), writes = op->vars.writes();
  VarEntry entries[kMaxWritesNow];
  if (!HoldNow(reads, writes, op->vars.updated_bits(), entries)) return false;
  ErrorRef err;
  {
    CurrentOpScope scope(op);
    try {
      WaitForQueuedGpuWork(reads, writes, nullptr);
      if (op->sync_fn()) op->sync_fn()(RunContext{ctx, nullptr, op_threads_});
    } catch (...) {
      err = MakeErrorRecord(std::current_exception(), op->name);
    }
  }
  PublishOutcome(writes, err, true);
  if (err) RecordError(err);
  ReleaseNow(reads, writes, true);
  // As Complete: a persistent op's count, or a temporary op with its block.
  if (op->refs) {
    if (op->refs->n.fetch_sub(1, std::memory_order_acq_rel) == 1) FreeOpr(op);
  } else if (op->home) {
    FreeOpr(op);
  }
  return true;
}

// ---- waiting ---------------------------------------------------------------

void EngineBase::BlockUntil(const std::atomic<bool>& done) {
  if (done.load(std::memory_order_acquire)) return;
  WorkerPool::FlushHandOff();
  WorkerPool* pool = WorkerPool::Current();
  if (pool) pool->BeginBlocking();
  Parker::Current()->ParkUntil([&] { return done.load(std::memory_order_acquire); });
  if (pool) pool->EndBlocking();
}

void EngineBase::WaitForVar(VarHandle var, WaitMode mode) {
  TS_CHECK(var != nullptr) << "WaitForVar: null variable";
  CheckWaitAgainstHolds(var, mode == WaitMode::kWrite, "WaitForVar");
  // A thread outside the engine would idle while it waits; like TBB's
  // wait_for_all, let it run the op it waits for instead of handing it across
  // cores. Threads inside ops never do: nested runs could wait on each other.
  if (!tls_current_op && !WorkerPool::Current()) HelpWith(var);
  // Fast path: nothing pending, as when a result was computed long ago.
  if (ErrorRef err; var->Settled(mode == WaitMode::kWrite, &err)) {
    RethrowPoison(err);
    HostWaitForGpuWork(var);
    return;
  }
  struct State {
    std::atomic<bool> done{false};
    Parker* parker = Parker::Current();
    VarHandle var;
    ErrorRef error;
  } st;
  st.var = var;
  // The waiter is an op queued on the variable like any other, but it needs
  // no worker: it runs on the thread that grants it, so a wait completes even
  // when every worker is busy.
  VarList none;
  VarList self(&st.var, 1);
  OprOwner op(NewTempOpr(mode == WaitMode::kRead ? self : none,
                         mode == WaitMode::kWrite ? self : none, FnProperty::kAsync, "WaitForVar"));
  op->always_run = true;
  op->SetAsync([s = &st](RunContext, CallbackOnComplete done) {
    s->error = s->var->error;
    Parker* p = s->parker;  // `s` may be gone once `done` is set
    s->done.store(true, std::memory_order_release);
    p->Unpark();
    done();
  });
  SubmitNew(op, Context::CPU(), 0);
  BlockUntil(st.done);
  RethrowPoison(st.error);
  HostWaitForGpuWork(var);
}

void EngineBase::NotifyWhenSettled(VarList vars, std::function<void(std::exception_ptr)> fn,
                                   WaitMode mode) {
  // A waiter like WaitForVar's that hands the poison over instead of
  // blocking: it holds the variables as written (so it follows reads too),
  // or as read (following writes only).
  const bool read = mode == WaitMode::kRead;
  OprOwner op(NewTempOpr(read ? vars : VarList{}, read ? VarList{} : vars, FnProperty::kAsync,
                         "NotifyWhenSettled"));
  op->always_run = true;
  op->SetAsync([fn = std::move(fn), op = op.get(), read](RunContext, CallbackOnComplete done) {
    std::exception_ptr error;
    // The notice says the values are there: the GPU's work too. This may
    // hold the thread that granted the waiter (a GPU worker) for as long.
    try {
      WaitForQueuedGpuWork(op->vars.reads(), op->vars.writes(), nullptr);
    } catch (...) {
      error = std::current_exception();
    }
    for (VarHandle v : read ? op->vars.reads() : op->vars.writes()) {
      ErrorRef e = v->error;
      if (!error && e) {
        e->Claim();
        try {
          e->Rethrow();
        } catch (...) {
          error = std::current_exception();
        }
      }
    }
    fn(std::move(error));  // the only reference: nothing of it stays on this thread
    done();
  });
  SubmitNew(op, Context::CPU(), 0);
}

void EngineBase::WaitForAll() {
  if (const Opr* op = tls_current_op)
    TS_THROW << "WaitForAll inside engine op '" << op->name << "' would wait for the op itself";
  if (!WorkerPool::Current()) HelpWithAll();  // as WaitForVar: run ready work here
  ParkWaiter([&] { return Pending() == 0; }, /*for_room=*/false);
  SettleDevicesAndReport();
}

bool EngineBase::WaitForAllIfIdle() {
  if (const Opr* op = tls_current_op)
    TS_THROW << "WaitForAll inside engine op '" << op->name << "' would wait for the op itself";
  if (Pending() != 0) return false;
  SettleDevicesAndReport();
  return true;
}

void EngineBase::SettleDevicesAndReport() {
  std::exception_ptr device_error;
  for (uint64_t devs = gpu_devices_queued_.load(std::memory_order_relaxed); devs;
       devs &= devs - 1) {
    try {
      GpuStreams()->device_sync(std::countr_zero(devs));
    } catch (...) {
      if (!device_error) device_error = std::current_exception();
    }
  }
  std::vector<ErrorRef> unreported;
  {
    std::lock_guard<std::mutex> lock(error_mu_);
    for (ErrorRef& e : errors_)
      if (e->Claim()) unreported.push_back(std::move(e));
    errors_.clear();
  }
  if (!unreported.empty()) unreported.front()->Rethrow(unreported.size() - 1);
  if (device_error) std::rethrow_exception(device_error);
}

void EngineBase::WaitForRoom(size_t bytes, MemKind kind) {
  // Never wait on an engine thread, nor inside an op's code: the ops in
  // flight may be waiting for that very op.
  if (!tls_current_op && !WorkerPool::Current() && !Holding())
    ParkWaiter([&] { return InflightRoom(bytes, kind); }, /*for_room=*/true);
}

namespace {
thread_local const Engine::ThreadBlocking* tls_blocking = nullptr;
}  // namespace

void Engine::SetThreadBlocking(const ThreadBlocking* blocking) {
  tls_blocking = blocking;
}

void EngineBase::ParkWaiter(const std::function<bool()>& done, bool for_room) {
  const Waiter me{tls_blocking ? nullptr : Parker::Current(), tls_blocking};
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    waiters_.push_back(me);
  }
  num_waiters_.fetch_add(1);
  if (for_room) num_room_waiters_.fetch_add(1);
  struct Leave {  // also when a serving thread's block throws (Ctrl-C)
    EngineBase* self;
    Waiter me;
    bool for_room;
    ~Leave() {
      if (for_room) self->num_room_waiters_.fetch_sub(1);
      self->num_waiters_.fetch_sub(1);
      std::lock_guard<std::mutex> lock(self->wait_mu_);
      self->waiters_.erase(std::find(self->waiters_.begin(), self->waiters_.end(), me));
    }
  } leave{this, me, for_room};
  if (me.blocking)
    me.blocking->block(done);
  else
    me.parker->ParkUntil(done);
}

void EngineBase::OpFinished(size_t bytes, MemKind kind) {
  if (bytes) inflight_bytes_[kind].fetch_sub(int64_t(bytes), std::memory_order_relaxed);
  completed_.fetch_add(1);
  TS_DCHECK(Pending() >= 0);  // no op completes twice
  TS_DCHECK(inflight_bytes_[kind].load(std::memory_order_relaxed) >= 0);
  if (num_waiters_.load() == 0) return;
  // WaitForAll's waiters need nothing pending; only run-ahead waiters wait
  // for room. Waking the first on every completion would cost a lock and a
  // futex call per op while a script sits in waitall(). A room waiter of
  // the other kind rechecks its own room on each wake.
  if (Pending() == 0 || (num_room_waiters_.load() > 0 && InflightRoom(0, kind))) WakeWaiters();
}

void EngineBase::WakeWaiters() {
  std::lock_guard<std::mutex> lock(wait_mu_);
  for (const Waiter& w : waiters_) {
    if (w.blocking)
      w.blocking->wake();
    else
      w.parker->Unpark();
  }
}

void EngineBase::RecordError(const ErrorRef& err) {
  std::lock_guard<std::mutex> lock(error_mu_);
  errors_.push_back(err);
  if (errors_.size() > 4096)  // drop what waits already reported
    std::erase_if(errors_, [](const ErrorRef& e) { return !e->pending(); });
}

}  // namespace tessera::engine
