// GPU work a variable's ops have queued that the host has not seen finish.
//
// A GPU op completes for the engine once its kernels are queued on its
// worker's stream and an event is recorded behind them (engine_base.cc, as
// MXNet 2's stream-ordered engine and PyTorch's streams): the next op on the
// same stream needs nothing more, stream order keeps it behind. Every other
// user of the variable goes through its fence first: an op on another stream
// makes its stream wait for the events (no host wait), while a CPU op, an
// asynchronous op, the deletion that frees the memory and a host wait for the
// variable wait on the host.
//
// Entries: at most one per stream, each the event after the newest op of that
// stream that used the variable. A write on stream S leaves {S} alone (its op
// waited for every other stream's entry first); a read on T replaces T's
// entry and keeps the rest (readers of one version run side by side). A
// serial per entry tells a host wait which entries it waited for: an event of
// the stream's ring may have been recorded again since.
//
// Lock: a spin lock held only to copy or change the entries, never across a
// CUDA call. Readers of one version use the fence concurrently; the engine
// orders a writer after them.
#pragma once

#include <atomic>
#include <cstdint>

#include "engine/base/spin_lock.h"

namespace tessera::engine {

struct GpuStreamOps;

class GpuFence {
 public:
  static constexpr int kMaxEntries = 4;  // streams reading one version at once

  // No entry: nothing of the variable is queued on a GPU (one load).
  bool empty() const { return count_.load(std::memory_order_acquire) == 0; }
  // Makes `stream`'s later work wait for the entries of other streams.
  void QueueWaits(const GpuStreamOps& ops, void* stream);
  // Waits on the host for every entry and drops those waited for; throws
  // tessera::Error when CUDA reports an error (a kernel that failed).
  void HostWait(const GpuStreamOps& ops);
  // True when every entry's event has passed (it drops them), without waiting.
  bool Passed(const GpuStreamOps& ops);
  // An op on `stream` queued its work, `event` behind it, and wrote (or
  // read) the variable.
  void AfterWrite(void* stream, void* event, uint64_t serial);
  void AfterRead(const GpuStreamOps& ops, void* stream, void* event, uint64_t serial);
  // Everything queued has finished (the op's stream was synchronised).
  void Clear();

 private:
  struct Entry {
    void* stream;
    void* event;
    uint64_t serial;
  };
  int Snapshot(Entry* out);               // copies the entries under the lock
  void Drop(const Entry* waited, int n);  // removes those still there
  void RemoveAt(int i);                   // caller holds the lock

  SpinLock lock_;
  std::atomic<int> count_{0};  // written under the lock
  Entry entries_[kMaxEntries] = {};
};

}  // namespace tessera::engine
