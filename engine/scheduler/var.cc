#include "engine/scheduler/var.h"

#include "engine/scheduler/object_pool.h"

namespace tessera::engine {

Var::Entry* Var::MakeEntry(VarEntry* spare, OprBlock* blk, bool write) {
  Entry* e = spare ? spare : ObjectPool<Entry>::New();
  e->next.store(nullptr, std::memory_order_relaxed);
  e->blk = blk;
  e->write = write;
  e->pooled = !spare;
  return e;
}

void Var::FreeEntry(Entry* e) {
  if (e->pooled) ObjectPool<Entry>::Delete(e);
}

Var::Entry* Var::NextWrite(Entry* done, Entry** last) {
  Entry* e = done->next.load(std::memory_order_acquire);
  *last = done;
  while (e && !e->write) {
    *last = e;
    e = e->next.load(std::memory_order_acquire);
  }
  return e;
}

bool Var::AppendRead(OprBlock* blk, VarEntry* spare) {
  if (!tail_) {  // no write queued: the read is granted at once
    lock_.lock();
    ++num_reads_;
    lock_.unlock();
    return true;
  }
  Entry* e = MakeEntry(spare, blk, false);
  Entry* prev = tail_;
  tail_ = e;
  prev->next.store(e, std::memory_order_release);  // the last touch of prev
  return false;
}

bool Var::AppendWrite(OprBlock* blk, VarEntry* spare) {
  Entry* e = MakeEntry(spare, blk, true);
  if (!tail_) {
    lock_.lock();
    TS_DCHECK(!first_write_);  // no queued write without a tail
    first_write_ = e;
    const bool granted = write_granted_ = num_reads_ == 0;
    lock_.unlock();
    tail_ = e;
    return granted;
  }
  Entry* prev = tail_;
  tail_ = e;
  prev->next.store(e, std::memory_order_release);  // the last touch of prev
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
  push_lock_.lock();
  bool free = !tail_;
  if (free) {
    lock_.lock();
    free = num_reads_ == 0;
    if (free) {
      entry->next.store(nullptr, std::memory_order_relaxed);
      entry->blk = nullptr;
      entry->write = true;
      entry->pooled = false;
      first_write_ = tail_ = entry;
      write_granted_ = true;
    }
    lock_.unlock();
  }
  push_lock_.unlock();
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
  push_lock_.lock();
  lock_.lock();
  const bool idle = !first_write_ && num_reads_ == 0;
  if (idle) deleted.store(true, std::memory_order_relaxed);
  lock_.unlock();
  push_lock_.unlock();
  return idle;
}

}  // namespace tessera::engine
