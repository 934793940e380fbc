// The op profiler: the engine reports every finished op (name, device, lane,
// thread, begin and end) and the profiler turns them into a Chrome trace
// (chrome://tracing, Perfetto) and a per-name aggregate table.
//
// Cost model. When recording is off the engine calls only enabled(), one
// relaxed atomic load. When on, RecordOp appends to a buffer owned by the
// calling thread under that buffer's own lock, which only a dump or Clear
// ever contends, so worker threads never serialise on each other. Buffers are
// registered in a process-wide list and outlive their thread (a finished
// thread's buffer is recycled by the next new thread), so a dump after the
// workers exit still sees everything they recorded.
//
// Memory bound. At most max_events() trace events (48 bytes each) are stored
// per process (TESSERA_PROFILER_MAX_EVENTS, default 1,000,000). Beyond it,
// events are counted as dropped and only the aggregates keep growing; the
// dump says how many were dropped (otherData.dropped_events and a global
// instant event). Aggregates hold one entry per distinct op name and thread,
// kept across Clear(), so names unique to each op cost memory.
//
// Trace layout. Each device is one trace process: pid is the rank of the
// device among the devices present in that dump, in Context order (cpu(i),
// then gpu(i), then cpu_pinned(i)); with cpu(0) and GPUs this is cpu(0) -> 0,
// gpu(i) -> 1 + i. tid is the thread index handed to RecordOp (ThreadIndex()
// of the worker), labelled with SetThreadName. Timestamps are microseconds
// (with a fractional part) since the profiler's start: the first
// SetState(true) after construction, or a Clear() while running.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/context.h"

namespace tessera::engine {

// Statistics of all recorded runs of one op name, across threads and devices.
struct OpAggregate {
  std::string name;
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t min_ns = 0;
  uint64_t max_ns = 0;
  double mean_ns() const { return count ? double(total_ns) / double(count) : 0.0; }
};

// A user marker (mx.profiler's Task, Frame, Event, Counter, Marker) or a
// memory counter: few, from any thread, stored apart from the ops.
struct Mark {
  std::string name;
  std::string domain;  // the trace's category ("memory" for memory counters)
  char phase = 'X';    // 'X' a span [begin_ns, end_ns], 'i' an instant, 'C' a counter
  char scope = 't';    // instants: 'g' global, 'p' process, 't' thread
  uint32_t thread = 0;
  uint64_t begin_ns = 0, end_ns = 0;
  std::vector<std::pair<std::string, double>> values;  // a counter's series
  bool on_device = false;  // counters of a device (memory) go under its process
  Context ctx;
};

class Profiler {
 public:
  // Process-wide and never destroyed, so worker threads and atexit handlers
  // may use it at any point of shutdown. TESSERA_PROFILER_AUTOSTART=1 makes
  // the first Get() start recording.
  static Profiler* Get();

  // Called by the engine once per op; nothing else is called when false.
  bool enabled() const { return running_.load(std::memory_order_relaxed); }
  // Starts or stops recording. Ops that finish while stopped are not recorded.
  // A profiler still running when the process exits dumps to its file.
  void SetState(bool running);
  // Where Dump() writes: "profile.json" unless TESSERA_PROFILER_FILE says
  // otherwise. `aggregate` adds the per-name aggregates to the dump (a
  // top-level "aggregate" array); they are collected in memory either way.
  void SetConfig(const std::string& filename, bool aggregate = true);
  std::string filename() const;
  bool aggregate() const;
  // Cap on stored trace events, process-wide. Lowering it below what is
  // stored keeps those events and stores no new ones until Clear().
  void SetMaxEvents(int64_t max_events);
  int64_t max_events() const { return max_events_.load(std::memory_order_relaxed); }

  // Steady clock in nanoseconds: the clock of begin_ns / end_ns.
  static uint64_t NowNs();
  // Small stable id of the calling thread: 0, 1, 2, ... in order of first use.
  static uint32_t ThreadIndex();
  // Labels the calling thread in traces, e.g. "cpu(0) compute 0".
  static void SetThreadName(const std::string& name);

  // One finished op. `name` and `lane` are copied (interned per thread), so
  // they need only live for the call; a null name counts as "unnamed".
  void RecordOp(const char* name, Context ctx, const char* lane, uint32_t thread, uint64_t begin_ns,
                uint64_t end_ns);

  // A marker, when recording (dropped beyond max_events() marks).
  void RecordMark(Mark mark);
  // profile_memory: each device's bytes in use and pooled as counters in
  // the trace, after every allocation and free while recording.
  void SetProfileMemory(bool on);
  bool profile_memory() const;

  // The trace as a complete JSON document holding everything recorded so far.
  std::string DumpsChromeTrace() const;
  // Writes DumpsChromeTrace() to `filename` (empty: the configured file)
  // through a temporary file and a rename, so readers and crashes never see
  // half a file. Throws tessera::Error when the file cannot be written.
  void Dump(const std::string& filename = "");

  // One row per op name: count, total, min, max, mean in ms, under a header;
  // sorted by total time (descending) or by name.
  std::string AggregateTable(bool sort_by_total = true) const;
  // The same data, sorted by name.
  std::vector<OpAggregate> Aggregate() const;

  // Trace events stored now, and events not stored because of the cap.
  int64_t StoredEvents() const;
  int64_t DroppedEvents() const;

  // Forgets every recorded event and aggregate; settings stay.
  void Clear();

  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

 private:
  struct Impl;
  struct ThreadBuffer;
  friend struct ThreadSlot;
  Profiler();
  ~Profiler() = delete;  // never destroyed: see Get()
  ThreadBuffer* LocalBuffer();
  void ReleaseBuffer(ThreadBuffer* buffer);
  // Reserves room for up to `want` more trace events from the process-wide
  // cap; returns how many were granted (possibly 0).
  int64_t ReserveEvents(int64_t want);

  // Read by every op, written rarely: alone on its cache line.
  alignas(64) std::atomic<bool> running_{false};
  alignas(64) std::atomic<int64_t> max_events_{0};
  std::atomic<int64_t> reserved_events_{0};  // slots handed to thread buffers
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::engine
