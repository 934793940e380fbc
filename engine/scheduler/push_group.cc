#include "engine/scheduler/push_group.h"

#include <atomic>
#include <cstdint>
#include <mutex>

#include "engine/base/error.h"
#include "engine/scheduler/push_group_internal.h"

namespace tessera::engine {

// Shared by the PushGroup and each op that joined it; the last to let go
// frees it.
struct PushGroupState {
  std::atomic<int64_t> pending{0};
  std::atomic<int64_t> refs{1};
  std::mutex mu;  // guards first_error and on_done
  ErrorRef first_error;
  std::function<void()> on_done;

  void Release() {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
};

void JoinPushGroup(PushGroupState* g) {
  g->refs.fetch_add(1, std::memory_order_relaxed);
  g->pending.fetch_add(1, std::memory_order_relaxed);
}

void LeavePushGroup(PushGroupState* g, const ErrorRef& err) {
  if (err) {
    std::lock_guard lock(g->mu);
    if (!g->first_error) g->first_error = err;
  }
  const int64_t before = g->pending.fetch_sub(1, std::memory_order_acq_rel);
  TS_DCHECK(before >= 1);  // each op leaves once
  if (before == 1) {
    std::function<void()> fn;
    {
      std::lock_guard lock(g->mu);
      fn = g->on_done;
    }
    if (fn) fn();
  }
  g->Release();
}

PushGroup::PushGroup() : state_(new PushGroupState), outer_(tls_push_group) {
  tls_push_group = state_;
}

PushGroup::~PushGroup() {
  Close();
  state_->Release();
}

void PushGroup::Close() {
  if (!open_) return;
  open_ = false;
  TS_DCHECK(tls_push_group == state_);  // closed on its thread, innermost first
  tls_push_group = outer_;
}

bool PushGroup::done() const {
  return state_->pending.load(std::memory_order_acquire) == 0;
}

void PushGroup::SetOnDone(std::function<void()> fn) {
  std::lock_guard lock(state_->mu);
  state_->on_done = std::move(fn);
}

void PushGroup::RethrowError() const {
  ErrorRef err;
  {
    std::lock_guard lock(state_->mu);
    err = state_->first_error;
  }
  if (!err) return;
  err->Claim();
  err->Rethrow();
}

}  // namespace tessera::engine
