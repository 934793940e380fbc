#include "engine/scheduler/var.h"

#include "engine/scheduler/object_pool.h"

namespace tessera::engine {

Var::Entry* Var::NewEntry(OprBlock* blk, bool write) {
  return ObjectPool<Entry>::New(Entry{nullptr, blk, write});
}
void Var::FreeEntry(Entry* e) {
  ObjectPool<Entry>::Delete(e);
}

bool Var::AppendRead(OprBlock* blk) {
  lock_.lock();
  if (!first_write_) {
    ++num_reads_;
    lock_.unlock();
    return true;
  }
  Entry* e = NewEntry(blk, false);
  tail_->next = e;
  tail_ = e;
  lock_.unlock();
  return false;
}

bool Var::AppendWrite(OprBlock* blk) {
  Entry* e = NewEntry(blk, true);
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
