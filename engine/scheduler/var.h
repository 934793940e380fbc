// An engine variable: the queue of ops waiting to use it. Readers of one
// version run together; a write waits for the reads before it and runs
// alone. Granting an op means decrementing its wait count; the op is ready
// when that reaches zero.
//
// The queue has two ends on two cache lines. Pushers append at the tail,
// under the push lock; the ops holding the variable complete at the head,
// under the head lock. While the queue is not empty neither side touches the
// other's line: a pusher links its entry behind the tail entry, and the
// completing op finds its successor through that link. So when a pusher runs
// ahead of a chain of ops on one variable, the pushing thread and the worker
// each keep their own line instead of passing one lock between them on every
// op. Only emptying the queue (head side) and appending to an empty queue
// (tail side) take both locks, always the push lock first.
#pragma once

#include <atomic>
#include <cstdint>

#include "engine/base/error.h"
#include "engine/base/spin_lock.h"
#include "engine/scheduler/error_record.h"
#include "engine/scheduler/gpu_fence.h"

namespace tessera::engine {

struct OprBlock;

// A place in a variable's queue. Ops carry entries for their first variables
// inline (OprBlock::entries); the rest come from a pool.
struct VarEntry {
  std::atomic<VarEntry*> next;  // set by the pusher that appends behind it
  OprBlock* blk;
  bool write;
  bool pooled;
};

class alignas(64) Var {
 public:
  // A push appends to all of its variables in one step: it takes the push
  // locks of every variable it names, in address order, before appending
  // to any (LockPush / UnlockPush). Appended one variable at a time, two
  // pushes from two threads could queue in opposite orders on two shared
  // variables, each waiting for the other for ever.
  void LockPush() { push_lock_.lock(); }
  void UnlockPush() { push_lock_.unlock(); }
  // Queue `blk` as a reader or writer; true when it is granted at once.
  // `spare` is the op's own entry for this variable, or null to use the
  // pool. The caller holds the push lock.
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
  // End a granted read or write; `grant(blk, newest)` is called, outside the
  // locks, for every op this makes ready to use the variable. `newest` is
  // the entry of a granted write that had nothing queued behind it (a pusher
  // may be appending behind it right now), else null; it stays valid until
  // that write completes.
  template <typename Grant>
  void CompleteRead(Grant grant);
  // `counts` is false for internal waiters, which hold the variable like a
  // write but change nothing: the version counts real writes only.
  template <typename Grant>
  void CompleteWrite(Grant grant, bool counts = true);

 private:
  using Entry = VarEntry;
  static Entry* MakeEntry(VarEntry* spare, OprBlock* blk, bool write);
  static void FreeEntry(Entry* e);
  // Head side, `done` being the granted write: the entry after the reads
  // that follow `done` (the next write, or null), and the last of them.
  static Entry* NextWrite(Entry* done, Entry** last);

  // ---- tail: pushers ----
  SpinLock push_lock_;
  // The newest queued entry; null when no write is queued (granted reads
  // leave the queue). Changed only under the push lock.
  Entry* tail_ = nullptr;

 public:
  // DeleteVariable was called. Every push reads it, so it lives on the
  // pushers' line.
  std::atomic<bool> deleted{false};
  // The serial of a hold (hold.h) that queued work writes, or reads, this
  // variable behind: a wait on it by the holding thread would never end.
  // Written under the push lock by pushes made inside the hold; read by the
  // same thread.
  std::atomic<uint64_t> owed_write{0}, owed_read{0};

  // ---- head: the ops holding the variable ----
  alignas(64) std::atomic<uint64_t> version{0};  // finished writes
  // Set by a failed writer, cleared by a successful one. Ordered by the
  // queue: only the op holding the variable reads or writes it.
  ErrorRef error;

 private:
  SpinLock lock_;
  int num_reads_ = 0;  // granted reads not yet complete
  // The oldest queued write, running or waiting: the queue runs from it to
  // tail_ through the entries' links. It becomes null or stops being null
  // only under both locks, as tail_ does.
  Entry* first_write_ = nullptr;
  bool write_granted_ = false;

 public:
  // GPU work queued for the variable and not yet seen finished: used by the
  // ops holding it and by host waits, on a line of its own.
  alignas(64) GpuFence fence;
};

// ---- implementation of the templates ---------------------------------------

template <typename Grant>
void Var::CompleteRead(Grant grant) {
  OprBlock* ready = nullptr;
  lock_.lock();
  TS_DCHECK(num_reads_ > 0);  // only a granted read completes
  if (--num_reads_ == 0 && first_write_ && !write_granted_) {
    write_granted_ = true;
    ready = first_write_->blk;
  }
  lock_.unlock();
  if (ready) grant(ready, nullptr);
}

template <typename Grant>
void Var::CompleteWrite(Grant grant, bool counts) {
  Entry* done = first_write_;                        // stays while this write holds the variable
  TS_DCHECK(done && done->write && write_granted_);  // only the granted write completes
  // Entries behind `done` stay queued until this call grants them, so the
  // links can be followed without a lock. Only when they end (the tail may
  // be just being appended to) does the queue need the push lock, to empty
  // it or to see what the pusher linked.
  Entry* last;
  Entry* next_write = NextWrite(done, &last);
  const bool at_tail = next_write == nullptr;
  if (at_tail) {
    push_lock_.lock();
    next_write = NextWrite(last, &last);  // what was appended meanwhile
    if (!next_write) tail_ = nullptr;
  }
  Entry* reads = done->next.load(std::memory_order_acquire);
  Entry* reads_end = next_write;
  lock_.lock();
  if (counts) version.fetch_add(1, std::memory_order_relaxed);
  for (Entry* e = reads; e != reads_end; e = e->next.load(std::memory_order_relaxed)) ++num_reads_;
  first_write_ = next_write;
  write_granted_ = next_write && num_reads_ == 0;
  OprBlock* ready_write = write_granted_ ? next_write->blk : nullptr;
  lock_.unlock();
  if (at_tail) push_lock_.unlock();
  const VarEntry* newest =
      ready_write && !next_write->next.load(std::memory_order_relaxed) ? next_write : nullptr;
  // The granted readers are out of the queue now; walk them unlocked.
  FreeEntry(done);
  for (Entry* e = reads; e != reads_end;) {
    Entry* next = e->next.load(std::memory_order_relaxed);
    OprBlock* blk = e->blk;
    FreeEntry(e);
    grant(blk, nullptr);
    e = next;
  }
  if (ready_write) grant(ready_write, newest);
}

}  // namespace tessera::engine
