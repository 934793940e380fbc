// An engine variable: the queue of ops waiting to use it. Readers of one
// version run together; a write waits for the reads before it and runs
// alone. Granting an op means decrementing its wait count; the op is ready
// when that reaches zero.
#pragma once

#include <atomic>
#include <cstdint>

#include "engine/scheduler/error_record.h"
#include "engine/base/spin_lock.h"

namespace tessera::engine {

struct OprBlock;

// A place in a variable's queue. Ops carry entries for their first variables
// inline (OprBlock::entries); the rest come from a pool.
struct VarEntry {
  VarEntry* next;
  OprBlock* blk;
  bool write;
  bool pooled;
};

// Cache-line aligned: neighbouring variables are often used by different
// threads at once, and each variable's lock is hot.
class alignas(64) Var {
 public:
  // Queue `blk` as a reader or writer; true when it is granted at once.
  // `spare` is the op's own entry for this variable, or null to use the pool.
  bool AppendRead(OprBlock* blk, VarEntry* spare);
  bool AppendWrite(OprBlock* blk, VarEntry* spare);
  // Holds the variable for a run on the calling thread when it is free: a
  // read when no write is queued, a write (queued as `entry`) when nothing
  // is. False, changing nothing, otherwise. Ended by CompleteRead or
  // CompleteWrite as for a granted op.
  bool TryHoldRead();
  bool TryHoldWrite(VarEntry* entry);
  // The write that holds the variable now (granted, maybe not started), or
  // null. Only for comparison: the op may finish and be freed at any moment.
  OprBlock* GrantedWriter();
  // True when nothing a wait must wait for is queued: no write (for a read
  // wait), or no read or write (for a write wait). Sets `error` to the
  // variable's error then, read under the lock that orders it.
  bool Settled(bool for_write, ErrorRef* error);
  // Marks the variable deleted if nothing is queued on it (no read, no
  // write) and says whether it did: then no op can use it any more.
  bool Retire();
  // End a granted read or write; `grant(blk)` is called, outside the lock,
  // for every op this makes ready to use the variable.
  template <typename Grant>
  void CompleteRead(Grant grant);
  // `counts` is false for internal waiters, which hold the variable like a
  // write but change nothing: the version counts real writes only.
  template <typename Grant>
  void CompleteWrite(Grant grant, bool counts = true);

  std::atomic<uint64_t> version{0};  // finished writes
  // Set by a failed writer, cleared by a successful one. Ordered by the
  // queue: only the op holding the variable reads or writes it.
  ErrorRef error;

 private:
  using Entry = VarEntry;
  static Entry* MakeEntry(VarEntry* spare, OprBlock* blk, bool write);
  static void FreeEntry(Entry* e);

  SpinLock lock_;
  int num_reads_ = 0;             // granted reads not yet complete
  Entry* first_write_ = nullptr;  // the oldest queued write, running or waiting
  Entry* tail_ = nullptr;         // the newest entry; the queue runs first_write_ .. tail_
  bool write_granted_ = false;

 public:
  // DeleteVariable was called. Every push reads it: on the lock's cache line,
  // which the worker completing ops on the variable keeps writing, each push
  // would pull that line over once more.
  alignas(64) std::atomic<bool> deleted{false};
};

// ---- implementation of the templates ---------------------------------------

template <typename Grant>
void Var::CompleteRead(Grant grant) {
  OprBlock* ready = nullptr;
  lock_.lock();
  if (--num_reads_ == 0 && first_write_ && !write_granted_) {
    write_granted_ = true;
    ready = first_write_->blk;
  }
  lock_.unlock();
  if (ready) grant(ready);
}

template <typename Grant>
void Var::CompleteWrite(Grant grant, bool counts) {
  lock_.lock();
  if (counts) version.fetch_add(1, std::memory_order_relaxed);
  Entry* done = first_write_;
  Entry* reads = done->next;  // readers queued behind the write, granted now
  Entry* e = reads;
  while (e && !e->write) {
    ++num_reads_;
    e = e->next;
  }
  Entry* reads_end = e;  // the next write (or null): stays queued
  first_write_ = e;
  write_granted_ = false;
  OprBlock* next_write = nullptr;
  if (!e) {
    tail_ = nullptr;
  } else if (num_reads_ == 0) {
    write_granted_ = true;
    next_write = e->blk;
  }
  lock_.unlock();
  // The granted readers were detached from the queue above; walk them unlocked.
  FreeEntry(done);
  for (e = reads; e != reads_end;) {
    Entry* next = e->next;
    OprBlock* blk = e->blk;
    FreeEntry(e);
    grant(blk);
    e = next;
  }
  if (next_write) grant(next_write);
}

}  // namespace tessera::engine
