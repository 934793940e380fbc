#include "engine/scheduler/engine_base.h"

#include <algorithm>

#include "engine/base/error.h"
#include "engine/base/thread_state.h"
#include "engine/scheduler/gpu_streams.h"
#include "engine/scheduler/object_pool.h"
#include "engine/scheduler/parker.h"
#include "engine/scheduler/profiler.h"
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

// Marks user code running: waits check against it, and no op may be handed
// off to this thread meanwhile.
struct CurrentOpScope {
  const Opr* saved;
  WorkerPool::HandOffScope no_handoff{false};
  explicit CurrentOpScope(const Opr* op) : saved(tls_current_op) {
    tls_current_op = op;
    ++OpDepth();
  }
  ~CurrentOpScope() {
    tls_current_op = saved;
    --OpDepth();
  }
};

bool Contains(const SmallVector<VarHandle, 4>& vars, VarHandle v) {
  return std::find(vars.begin(), vars.end(), v) != vars.end();
}

// Sorts and deduplicates, and drops from `reads` what is also written: a
// variable named twice, or read and written, is written once.
void Normalise(Opr* op, VarList const_vars, VarList mutate_vars) {
  for (VarList list : {const_vars, mutate_vars}) {
    for (VarHandle v : list) {
      TS_CHECK(v != nullptr) << "engine op '" << op->name << "': null variable";
      TS_CHECK(!v->deleted.load(std::memory_order_relaxed))
          << "engine op '" << op->name << "': variable used after DeleteVariable";
    }
  }
  auto& w = op->mutate_vars;
  w = SmallVector<VarHandle, 4>(mutate_vars.begin(), mutate_vars.end());
  if (w.size() > 1) {
    std::sort(w.begin(), w.end());
    w.resize_down(std::unique(w.begin(), w.end()) - w.begin());
  }
  auto& r = op->const_vars;
  r.clear();
  for (VarHandle v : const_vars)
    if (!Contains(w, v) && !Contains(r, v)) r.push_back(v);
}

ErrorRef FindPoison(const Opr* op) {
  for (const auto* list : {&op->const_vars, &op->mutate_vars})
    for (VarHandle v : *list)
      if (v->error && v->error->pending()) return v->error;
  return nullptr;
}

}  // namespace

// ---- variables and ops -----------------------------------------------------

VarHandle EngineBase::NewVariable() {
  return ObjectPool<Var>::New();
}

Opr* EngineBase::NewTempOpr(VarList const_vars, VarList mutate_vars, FnProperty prop,
                            const char* name, bool persistent) {
  Opr* op;
  if (persistent) {
    op = ObjectPool<Opr>::New();
  } else {
    OprBlock* home = ObjectPool<OprBlock>::New();
    op = &home->temp_opr;
    op->home = home;
  }
  op->prop = prop;
  op->name = name ? name : "unnamed";
  try {
    Normalise(op, const_vars, mutate_vars);
  } catch (...) {
    FreeOpr(op);
    throw;
  }
  return op;
}

void EngineBase::FreeOpr(Opr* op) {
  if (op->home)
    ObjectPool<OprBlock>::Delete(op->home);
  else
    ObjectPool<Opr>::Delete(op);
}

void EngineBase::PushSync(SyncFn fn, Context ctx, VarList const_vars, VarList mutate_vars,
                          FnProperty prop, int priority, const char* name) {
  Opr* op = NewTempOpr(const_vars, mutate_vars, prop, name);
  op->sync_fn = std::move(fn);
  try {
    Submit(op, ctx, priority);
  } catch (...) {
    FreeOpr(op);
    throw;
  }
}

void EngineBase::PushAsync(AsyncFn fn, Context ctx, VarList const_vars, VarList mutate_vars,
                           FnProperty prop, int priority, const char* name) {
  TS_CHECK(fn) << "engine op '" << (name ? name : "unnamed") << "': empty async function";
  Opr* op = NewTempOpr(const_vars, mutate_vars, prop, name);
  op->async_fn = std::move(fn);
  op->is_async = true;
  try {
    Submit(op, ctx, priority);
  } catch (...) {
    FreeOpr(op);
    throw;
  }
}

OprHandle EngineBase::NewOperator(AsyncFn fn, VarList const_vars, VarList mutate_vars,
                                  FnProperty prop, const char* name) {
  TS_CHECK(fn) << "engine op '" << (name ? name : "unnamed") << "': empty async function";
  Opr* op = NewTempOpr(const_vars, mutate_vars, prop, name, /*persistent=*/true);
  op->async_fn = std::move(fn);
  op->is_async = true;
  op->temporary = false;
  if (op->const_vars.empty() && op->mutate_vars.empty())
    op->refs = std::make_unique<Opr::RefCount>();
  return op;
}

void EngineBase::Push(OprHandle op, Context ctx, int priority) {
  TS_CHECK(op != nullptr) << "Push: null operator";
  for (const auto* list : {&op->const_vars, &op->mutate_vars})
    for (VarHandle v : *list)
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
  SmallVector<VarHandle, 8> all(op->const_vars.begin(), op->const_vars.end());
  for (VarHandle v : op->mutate_vars) all.push_back(v);
  Opr* del = NewTempOpr({}, all, FnProperty::kAsync, "DeleteOperator");
  del->sync_fn = [op](RunContext) { FreeOpr(op); };
  del->always_run = true;  // also after a failed push; changes no variable
  try {
    Submit(del, Context::CPU(), 0);
  } catch (...) {
    FreeOpr(del);
    throw;
  }
}

void EngineBase::DeleteVariable(SyncFn delete_fn, Context ctx, VarHandle var) {
  TS_CHECK(var != nullptr) << "DeleteVariable: null variable";
  // Nothing queued on the variable (the common end of an array whose results
  // were used long ago): free it now instead of queueing an op that would be
  // ready at once. Host frees only: a device free may have to wait for it.
  if ((!delete_fn || ctx.dev_type == DeviceType::kCPU) && var->Retire()) {
    if (delete_fn) {
      try {
        delete_fn(RunContext{ctx, nullptr});
      } catch (...) {
        RecordError(MakeErrorRecord(std::current_exception(), "DeleteVariable"));
      }
    }
    ObjectPool<Var>::Delete(var);
    return;
  }
  Opr* op = NewTempOpr({}, {var}, FnProperty::kDeleteVar, "DeleteVariable");
  op->sync_fn = std::move(delete_fn);
  op->always_run = true;  // a poisoned array's memory goes back to the pool too
  var->deleted.store(true, std::memory_order_relaxed);
  try {
    Submit(op, ctx, 0);
  } catch (...) {
    var->deleted.store(false, std::memory_order_relaxed);
    FreeOpr(op);
    throw;
  }
}

OprBlock* EngineBase::NewBlock(Opr* opr, Context ctx, int priority) {
  OprBlock* blk = opr->home ? opr->home : ObjectPool<OprBlock>::New();
  blk->opr = opr;
  blk->ctx = ctx;
  blk->priority = priority;
  return blk;
}

bool EngineBase::AppendToVars(OprBlock* blk) {
  const Opr* op = blk->opr;
  int n = static_cast<int>(op->const_vars.size() + op->mutate_vars.size());
  // One extra count, held while appending, keeps the op from becoming ready
  // (and being freed by a worker) before this loop ends.
  blk->wait.store(n + 1, std::memory_order_relaxed);
  pushed_.fetch_add(1);
  // Every variable's push lock, in address order, before the first append
  // (see Var::LockPush). The lists are disjoint after Normalise.
  SmallVector<VarHandle, 8> locked(op->const_vars.begin(), op->const_vars.end());
  for (VarHandle v : op->mutate_vars) locked.push_back(v);
  if (locked.size() > 1) std::sort(locked.begin(), locked.end());
  for (VarHandle v : locked) v->LockPush();
  int granted = 1, i = 0;
  auto spare = [&] { return i < 2 ? &blk->entries[i++] : nullptr; };
  for (VarHandle v : op->const_vars) granted += v->AppendRead(blk, spare());
  for (VarHandle v : op->mutate_vars) granted += v->AppendWrite(blk, spare());
  for (VarHandle v : locked) v->UnlockPush();
  return blk->wait.fetch_sub(granted, std::memory_order_acq_rel) == granted;
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
  RunContext run{blk->ctx, rctx.stream};
  if (!op->is_async) {
    ErrorRef err;
    {
      CurrentOpScope scope(op);
      try {
        if (op->sync_fn) op->sync_fn(run);
        if (run.ctx.is_gpu() && run.stream) GpuStreams()->sync(run.stream);
      } catch (...) {
        err = MakeErrorRecord(std::current_exception(), op->name);
      }
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
      op->async_fn(run, CallbackOnComplete(&EngineBase::OnAsyncDone, this, blk));
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
  const bool real_op = !op->always_run;  // waiters leave variables as they were
  if (err) {
    for (VarHandle v : op->mutate_vars) v->error = err;
    if (new_error) RecordError(err);
  } else if (real_op) {
    for (VarHandle v : op->mutate_vars)
      if (v->error) v->error.reset();  // a successful write replaces the bad value
  }
  auto grant = [this](OprBlock* b) { Grant(b); };
  for (VarHandle v : op->const_vars) v->CompleteRead(grant);
  for (VarHandle v : op->mutate_vars) v->CompleteWrite(grant, real_op);
  if (op->prop == FnProperty::kDeleteVar)
    for (VarHandle v : op->mutate_vars) ObjectPool<Var>::Delete(v);
  // A temporary op is freed with its block, below.
  if (op->refs && op->refs->n.fetch_sub(1, std::memory_order_acq_rel) == 1) FreeOpr(op);
  std::atomic<bool>* done = blk->done_flag;
  Parker* pusher = blk->pusher;
  if (free_block) ObjectPool<OprBlock>::Delete(blk);
  OpFinished();
  if (done) {
    done->store(true, std::memory_order_release);
    pusher->Unpark();
  }
}

// ---- running on the calling thread -----------------------------------------

bool EngineBase::TryRunNowImpl(void (*call)(void*), void* fn, VarList const_vars,
                               VarList mutate_vars, const char* name) {
  constexpr size_t kMaxReads = 8, kMaxWrites = 4;
  if (const_vars.size() > kMaxReads || mutate_vars.size() > kMaxWrites) return false;
  if (Profiler::Get()->enabled()) return false;  // a pushed op shows in the trace
  // Each variable once, as a push normalises them: a write wins over a read
  // of the same variable (`a * a` reads a twice). Deleted ones are left to
  // the push, which reports them.
  VarHandle reads[kMaxReads], writes[kMaxWrites];
  size_t n_reads = 0, n_writes = 0;
  auto listed = [](const VarHandle* list, size_t n, VarHandle v) {
    return std::find(list, list + n, v) != list + n;
  };
  for (VarHandle v : mutate_vars) {
    if (!v || v->deleted.load(std::memory_order_relaxed)) return false;
    if (!listed(writes, n_writes, v)) writes[n_writes++] = v;
  }
  for (VarHandle v : const_vars) {
    if (!v || v->deleted.load(std::memory_order_relaxed)) return false;
    if (!listed(writes, n_writes, v) && !listed(reads, n_reads, v)) reads[n_reads++] = v;
  }
  auto grant = [this](OprBlock* b) { Grant(b); };
  size_t held_reads = 0, held_writes = 0;
  VarEntry entries[kMaxWrites];
  auto release = [&](bool wrote) {
    for (size_t i = 0; i < held_reads; ++i) reads[i]->CompleteRead(grant);
    for (size_t i = 0; i < held_writes; ++i) writes[i]->CompleteWrite(grant, wrote);
  };
  // Poisoned variables too are left to the push, which skips the op.
  bool free = true;
  for (size_t i = 0; free && i < n_reads; ++i) {
    if (!(free = reads[i]->TryHoldRead())) break;
    ++held_reads;
    // Read only by a holder of the variable (see Var::error).
    free = !(reads[i]->error && reads[i]->error->pending());
  }
  for (size_t i = 0; free && i < n_writes; ++i) {
    if (!(free = writes[i]->TryHoldWrite(&entries[i]))) break;
    ++held_writes;
    free = !(writes[i]->error && writes[i]->error->pending());
  }
  if (!free) {
    release(false);
    return false;
  }
  ErrorRef err;
  try {
    call(fn);
  } catch (...) {
    err = MakeErrorRecord(std::current_exception(), name ? name : "unnamed");
  }
  for (size_t i = 0; i < n_writes; ++i) {
    if (err)
      writes[i]->error = err;
    else if (writes[i]->error)
      writes[i]->error.reset();  // a successful write replaces the bad value
  }
  if (err) RecordError(err);
  release(true);
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
  if (const Opr* op = tls_current_op) {
    bool self_wait = Contains(op->mutate_vars, var) ||
                     (mode == WaitMode::kWrite && Contains(op->const_vars, var));
    TS_CHECK(!self_wait) << "WaitForVar inside engine op '" << op->name
                         << "' on a variable that op uses would wait for the op itself";
  }
  // A thread outside the engine would idle while it waits; like TBB's
  // wait_for_all, let it run the op it waits for instead of handing it across
  // cores. Threads inside ops never do: nested runs could wait on each other.
  if (!tls_current_op && !WorkerPool::Current()) HelpWith(var);
  // Fast path: nothing pending, as when a result was computed long ago.
  if (ErrorRef err; var->Settled(mode == WaitMode::kWrite, &err)) {
    if (err && err->Claim()) err->Rethrow();
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
  Opr* op = NewTempOpr(mode == WaitMode::kRead ? self : none,
                       mode == WaitMode::kWrite ? self : none, FnProperty::kAsync, "WaitForVar");
  op->always_run = true;
  op->is_async = true;
  op->async_fn = [s = &st](RunContext, CallbackOnComplete done) {
    s->error = s->var->error;
    Parker* p = s->parker;  // `s` may be gone once `done` is set
    s->done.store(true, std::memory_order_release);
    p->Unpark();
    done();
  };
  try {
    Submit(op, Context::CPU(), 0);
  } catch (...) {
    FreeOpr(op);
    throw;
  }
  BlockUntil(st.done);
  if (st.error && st.error->Claim()) st.error->Rethrow();
}

void EngineBase::NotifyWhenSettled(VarList vars, std::function<void(std::exception_ptr)> fn) {
  // A waiter like WaitForVar's, holding every variable as written (so it
  // follows reads too), that hands the poison over instead of blocking.
  Opr* op = NewTempOpr({}, vars, FnProperty::kAsync, "NotifyWhenSettled");
  op->always_run = true;
  op->is_async = true;
  op->async_fn = [fn = std::move(fn), op](RunContext, CallbackOnComplete done) {
    std::exception_ptr error;
    for (VarHandle v : op->mutate_vars) {
      ErrorRef e = v->error;
      if (!error && e && e->Claim()) {
        try {
          e->Rethrow();
        } catch (...) {
          error = std::current_exception();
        }
      }
    }
    fn(error);
    done();
  };
  try {
    Submit(op, Context::CPU(), 0);
  } catch (...) {
    FreeOpr(op);
    throw;
  }
}

void EngineBase::WaitForAll() {
  if (const Opr* op = tls_current_op)
    TS_THROW << "WaitForAll inside engine op '" << op->name << "' would wait for the op itself";
  Parker* me = Parker::Current();
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    waiters_.push_back(me);
  }
  num_waiters_.fetch_add(1);
  me->ParkUntil([&] { return Pending() == 0; });
  num_waiters_.fetch_sub(1);
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    waiters_.erase(std::find(waiters_.begin(), waiters_.end(), me));
  }
  std::vector<ErrorRef> unreported;
  {
    std::lock_guard<std::mutex> lock(error_mu_);
    for (ErrorRef& e : errors_)
      if (e->Claim()) unreported.push_back(std::move(e));
    errors_.clear();
  }
  if (!unreported.empty()) unreported.front()->Rethrow(unreported.size() - 1);
}

void EngineBase::WaitForInflightBound() {
  int64_t bound = max_inflight_.load(std::memory_order_relaxed);
  if (bound <= 0 || Pending() < bound) return;
  if (tls_current_op || WorkerPool::Current()) return;  // never block the engine's own threads
  Parker* me = Parker::Current();
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    waiters_.push_back(me);
  }
  num_waiters_.fetch_add(1);
  me->ParkUntil([&] { return Pending() < max_inflight_.load(); });
  num_waiters_.fetch_sub(1);
  std::lock_guard<std::mutex> lock(wait_mu_);
  waiters_.erase(std::find(waiters_.begin(), waiters_.end(), me));
}

void EngineBase::OpFinished() {
  completed_.fetch_add(1);
  if (num_waiters_.load() == 0) return;
  int64_t left = Pending();
  if (left == 0 || left < max_inflight_.load()) WakeWaiters();
}

void EngineBase::WakeWaiters() {
  std::lock_guard<std::mutex> lock(wait_mu_);
  for (Parker* p : waiters_) p->Unpark();
}

void EngineBase::RecordError(const ErrorRef& err) {
  std::lock_guard<std::mutex> lock(error_mu_);
  errors_.push_back(err);
  if (errors_.size() > 4096)  // drop what waits already reported
    std::erase_if(errors_, [](const ErrorRef& e) { return !e->pending(); });
}

}  // namespace tessera::engine
