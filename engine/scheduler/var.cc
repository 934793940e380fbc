#include "engine/scheduler/var.h"

#include "engine/scheduler/object_pool.h"

namespace tessera::engine {

Var::Entry* Var::MakeEntry(VarEntry* spare, OprBlock* blk, bool write) {
  if (spare) {
    *spare = Entry{nullptr, blk, write, false};
    return spare;
  }
  return ObjectPool<Entry>::New(Entry{nullptr, blk, write, true});
}

void Var::FreeEntry(Entry* e) {
  if (e->pooled) ObjectPool<Entry>::Delete(e);
}

bool Var::AppendRead(OprBlock* blk, VarEntry* spare) {
  lock_.lock();
  if (!first_write_) {
    ++num_reads_;
    lock_.unlock();
    return true;
  }
  Entry* e = MakeEntry(spare, blk, false);
  tail_->next = e;
  tail_ = e;
  lock_.unlock();
  return false;
}

bool Var::TryHoldRead() {
  lock_.lock();
  const bool free = !first_write_;
  if (free) ++num_reads_;
  lock_.unlock();
  return free;
}

bool Var::TryHoldWrite(VarEntry* entry) {
  lock_.lock();
  const bool free = !first_write_ && num_reads_ == 0;
  if (free) {
    *entry = Entry{nullptr, nullptr, true, false};
    first_write_ = tail_ = entry;
    write_granted_ = true;
  }
  lock_.unlock();
  return free;
}

OprBlock* Var::GrantedWriter() {
  lock_.lock();
  OprBlock* w = first_write_ && write_granted_ ? first_write_->blk : nullptr;
  lock_.unlock();
  return w;
}

bool Var::Settled(bool for_write, ErrorRef* err) {
  lock_.lock();
  bool settled = !first_write_ && (!for_write || num_reads_ == 0);
  if (settled) *err = error;
  lock_.unlock();
  return settled;
}

bool Var::Retire() {
  lock_.lock();
  const bool idle = !first_write_ && num_reads_ == 0;
  if (idle) deleted.store(true, std::memory_order_relaxed);
  lock_.unlock();
  return idle;
}

bool Var::AppendWrite(OprBlock* blk, VarEntry* spare) {
  Entry* e = MakeEntry(spare, blk, true);
  lock_.lock();
  bool granted = false;
  if (!first_write_) {
    first_write_ = tail_ = e;
    granted = write_granted_ = (num_reads_ == 0);
  } else {
    tail_->next = e;
    tail_ = e;
  }
  lock_.unlock();
  return granted;
}

}  // namespace tessera::engine
