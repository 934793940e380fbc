#include "engine/scheduler/profiler.h"

#include "engine/base/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <nlohmann/json.hpp>

#include "engine/base/env.h"
#include "engine/base/error.h"
#include "engine/base/host_sync.h"
#include "engine/base/logging.h"
#include "engine/base/memory_events.h"

namespace tessera::engine {

namespace {

// Chunks start small so that the many threads that record a handful of ops
// hold little of the process-wide event budget, and grow so that busy
// threads rarely allocate.
constexpr int64_t kFirstChunk = 256;
constexpr int64_t kMaxChunk = 16384;
constexpr int64_t kDefaultMaxEvents = 1000000;

// One stored trace event. name and lane point into the recording thread's
// intern tables, which are never erased, so a snapshot copied out under the
// buffer lock stays readable after the lock is released.
struct Event {
  const char* name;
  const char* lane;
  Context ctx;
  uint32_t thread;
  uint64_t begin_ns;
  uint64_t end_ns;
};

struct Chunk {
  std::unique_ptr<Event[]> events;
  int64_t capacity = 0;
  int64_t size = 0;
};

struct Stats {
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t min_ns = 0;
  uint64_t max_ns = 0;

  void Add(uint64_t dur) {
    min_ns = count == 0 ? dur : std::min(min_ns, dur);
    max_ns = count == 0 ? dur : std::max(max_ns, dur);
    total_ns += dur;
    ++count;
  }
  void Merge(const Stats& o) {
    if (o.count == 0) return;
    min_ns = count == 0 ? o.min_ns : std::min(min_ns, o.min_ns);
    max_ns = count == 0 ? o.max_ns : std::max(max_ns, o.max_ns);
    total_ns += o.total_ns;
    count += o.count;
  }
};

// Lets the per-thread maps look names up by string_view without building a
// std::string on every op.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

std::atomic<uint32_t> g_next_thread_index{0};

// Keys stay in the order they are written, not sorted: an event reads name
// first, its arguments last.
using Json = nlohmann::ordered_json;

// The trace's unit, microseconds, from nanoseconds: the nearest double to
// the three-decimal value, which the writer prints as the shortest text that
// reads back as it, so 2500 ns is 2.5 and 1 ns 0.001.
double Micros(int64_t ns) {
  return double(ns) / 1e3;
}

std::string FormatMs(uint64_t ns) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.4f", double(ns) / 1e6);
  return buf;
}

std::string FormatMs(double ns) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.4f", ns / 1e6);
  return buf;
}

// Control characters would break the table's rows; the JSON dump keeps the
// exact name.
std::string TableName(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return out;
}

void DumpAtExit() {
  Profiler* p = Profiler::Get();
  if (!p->enabled()) return;
  p->SetState(false);
  try {
    p->Dump();
  } catch (const std::exception& e) {
    TS_LOG(Error) << "profiler: dump at exit failed: " << e.what();
  }
}

}  // namespace

// Everything one thread records. The lock is taken by its owner on every op
// and by dumps, Clear and counters; owners never contend with each other.
struct alignas(64) Profiler::ThreadBuffer {
  std::mutex mu;
  // Per-name statistics, and the intern table for event names: entries are
  // zeroed by Clear but never erased, so event name pointers stay valid.
  std::unordered_map<std::string, Stats, StringHash, std::equal_to<>> names;
  std::unordered_set<std::string, StringHash, std::equal_to<>> lanes;
  const char* last_lane = nullptr;  // engine threads use one lane: skip the hash
  std::vector<Chunk> chunks;
  int64_t next_chunk = kFirstChunk;
  int64_t stored = 0;
  int64_t dropped = 0;
  uint64_t first_drop_ns = 0;

  const char* InternLane(const char* lane) {
    if (last_lane && std::strcmp(last_lane, lane) == 0) return last_lane;
    auto it = lanes.find(std::string_view(lane));
    if (it == lanes.end()) it = lanes.emplace(lane).first;
    last_lane = it->c_str();
    return last_lane;
  }
};

struct Profiler::Impl {
  // Guards the buffer list. Order: registry_mu, then buffer locks in list order.
  std::mutex registry_mu;
  std::vector<std::unique_ptr<ThreadBuffer>> buffers;
  std::vector<ThreadBuffer*> free_buffers;  // of exited threads, for reuse

  mutable std::mutex config_mu;
  std::string filename;
  bool aggregate = true;
  std::once_flag atexit_once;

  // Trace time zero in NowNs() units; 0 until recording first starts.
  std::atomic<uint64_t> origin_ns{0};

  std::mutex thread_names_mu;
  std::unordered_map<uint32_t, std::string> thread_names;

  std::mutex marks_mu;
  std::vector<Mark> marks;
  int64_t dropped_marks = 0;
  std::atomic<bool> profile_memory{false};
};

// Owns the calling thread's buffer and hands it back for reuse when the
// thread exits; the events in it stay for later dumps.
struct ThreadSlot {
  Profiler::ThreadBuffer* buffer = nullptr;
  ~ThreadSlot() {
    if (buffer) Profiler::Get()->ReleaseBuffer(buffer);
  }
};

namespace {
thread_local ThreadSlot t_slot;
}  // namespace

Profiler* Profiler::Get() {
  // Leaked on purpose: worker threads and atexit handlers may record or dump
  // after static destructors have started.
  static Profiler* const profiler = [] {
    auto* p = new Profiler();
    if (EnvBool("TESSERA_PROFILER_AUTOSTART", false)) p->SetState(true);
    return p;
  }();
  return profiler;
}

namespace {

// A host synchronisation inside an op (engine/base/host_sync.h): a span on
// the waiting thread, in the "sync" category, named after what waited.
void OnHostSync(const char* who, uint64_t wait_ns) {
  Profiler* p = Profiler::Get();
  if (!p->enabled()) return;
  Mark m;
  m.name = std::string("host sync: ") + who;
  m.domain = "sync";
  m.thread = Profiler::ThreadIndex();
  m.end_ns = Profiler::NowNs();
  m.begin_ns = m.end_ns - std::min(wait_ns, m.end_ns);
  p->RecordMark(std::move(m));
}

}  // namespace

Profiler::Profiler() : impl_(std::make_unique<Impl>()) {
  SetHostSyncListener(OnHostSync);
  impl_->filename = EnvString("TESSERA_PROFILER_FILE", "profile.json");
  int64_t max_events = EnvInt("TESSERA_PROFILER_MAX_EVENTS", kDefaultMaxEvents);
  TS_CHECK(max_events >= 0) << "TESSERA_PROFILER_MAX_EVENTS must be >= 0, got " << max_events;
  max_events_.store(max_events, std::memory_order_relaxed);
}

void Profiler::SetState(bool running) {
  if (running) {
    uint64_t expected = 0;
    impl_->origin_ns.compare_exchange_strong(expected, NowNs());
    std::call_once(impl_->atexit_once, [] { std::atexit(DumpAtExit); });
  }
  running_.store(running, std::memory_order_relaxed);
}

void Profiler::SetConfig(const std::string& filename, bool aggregate) {
  TS_CHECK(!filename.empty()) << "profiler: the dump file name must not be empty";
  std::lock_guard<std::mutex> lock(impl_->config_mu);
  impl_->filename = filename;
  impl_->aggregate = aggregate;
}

std::string Profiler::filename() const {
  std::lock_guard<std::mutex> lock(impl_->config_mu);
  return impl_->filename;
}

bool Profiler::aggregate() const {
  std::lock_guard<std::mutex> lock(impl_->config_mu);
  return impl_->aggregate;
}

void Profiler::SetMaxEvents(int64_t max_events) {
  TS_CHECK(max_events >= 0) << "profiler: max events must be >= 0, got " << max_events;
  max_events_.store(max_events, std::memory_order_relaxed);
}

uint64_t Profiler::NowNs() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

uint32_t Profiler::ThreadIndex() {
  thread_local const uint32_t index = g_next_thread_index.fetch_add(1, std::memory_order_relaxed);
  return index;
}

void Profiler::SetThreadName(const std::string& name) {
  uint32_t index = ThreadIndex();
  Impl* impl = Get()->impl_.get();
  std::lock_guard<std::mutex> lock(impl->thread_names_mu);
  impl->thread_names[index] = name;
}

Profiler::ThreadBuffer* Profiler::LocalBuffer() {
  if (t_slot.buffer) return t_slot.buffer;
  std::lock_guard<std::mutex> lock(impl_->registry_mu);
  if (!impl_->free_buffers.empty()) {
    t_slot.buffer = impl_->free_buffers.back();
    impl_->free_buffers.pop_back();
  } else {
    impl_->buffers.push_back(std::make_unique<ThreadBuffer>());
    t_slot.buffer = impl_->buffers.back().get();
  }
  return t_slot.buffer;
}

void Profiler::ReleaseBuffer(ThreadBuffer* buffer) {
  std::lock_guard<std::mutex> lock(impl_->registry_mu);
  impl_->free_buffers.push_back(buffer);
}

int64_t Profiler::ReserveEvents(int64_t want) {
  int64_t max = max_events_.load(std::memory_order_relaxed);
  int64_t used = reserved_events_.load(std::memory_order_relaxed);
  while (true) {
    int64_t grant = std::min(want, max - used);
    if (grant <= 0) return 0;
    if (reserved_events_.compare_exchange_weak(used, used + grant, std::memory_order_relaxed)) {
      return grant;
    }
  }
}

void Profiler::RecordOp(const char* name, Context ctx, const char* lane, uint32_t thread,
                        uint64_t begin_ns, uint64_t end_ns) {
  if (!enabled()) return;
  if (!name) name = "unnamed";
  if (!lane) lane = "";
  uint64_t dur = end_ns >= begin_ns ? end_ns - begin_ns : 0;
  ThreadBuffer* b = LocalBuffer();
  std::lock_guard<std::mutex> lock(b->mu);

  auto it = b->names.find(std::string_view(name));
  if (it == b->names.end()) it = b->names.try_emplace(std::string(name)).first;
  it->second.Add(dur);

  if (b->chunks.empty() || b->chunks.back().size == b->chunks.back().capacity) {
    int64_t granted = ReserveEvents(b->next_chunk);
    if (granted == 0) {
      if (b->dropped++ == 0) b->first_drop_ns = end_ns;
      return;
    }
    Chunk chunk;
    chunk.events = std::make_unique_for_overwrite<Event[]>(size_t(granted));
    chunk.capacity = granted;
    b->chunks.push_back(std::move(chunk));
    b->next_chunk = std::min(b->next_chunk * 2, kMaxChunk);
  }
  Chunk& c = b->chunks.back();
  c.events[size_t(c.size++)] =
      Event{it->first.c_str(), b->InternLane(lane), ctx, thread, begin_ns, end_ns};
  ++b->stored;
}

namespace {

// What a dump needs, copied out buffer by buffer so that no worker waits for
// the JSON to be written.
struct Snapshot {
  std::vector<Event> events;
  std::map<std::string_view, Stats> stats;  // keys point into intern tables
  int64_t dropped = 0;
  uint64_t first_drop_ns = 0;
};

// Invalid UTF-8 in an op name is replaced, never thrown on: a name must not
// make a dump fail.
std::string DumpJson(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// The trace document's text, its events serialized one at a time as they
// are added, one per line: a million events held as JSON values at once
// took 1.5 GB and 7 s to dump, one at a time 0.2 GB and 0.8 s.
class TraceWriter {
 public:
  // `envelope`: every member of the document, traceEvents first and empty;
  // the events go between its brackets, the first '[' of its text.
  TraceWriter(const Json& envelope, size_t expected_events) : tail_(DumpJson(envelope)) {
    const size_t at = tail_.find('[') + 1;
    out_.reserve(tail_.size() + 160 * expected_events);
    out_.assign(tail_, 0, at);
    tail_.erase(0, at);
  }
  void Add(const Json& event) {
    if (!first_) out_ += ",\n";
    first_ = false;
    out_ += DumpJson(event);
  }
  std::string Finish() && {
    out_ += tail_;
    out_ += '\n';
    return std::move(out_);
  }

 private:
  std::string out_;
  std::string tail_;  // "]" and the members after traceEvents
  bool first_ = true;
};

// The "X" event of each op, on the process of its device (`pids`), times
// relative to `origin`; `threads` collects the (pid, tid) pairs seen. One
// object serves every event, its members assigned in place: made afresh per
// event, the objects took 2.8 s per million events against 0.8 s.
void AddOpEvents(const std::vector<Event>& events, const std::map<Context, int>& pids,
                 uint64_t origin, TraceWriter* trace, std::set<std::pair<int, uint32_t>>* threads) {
  Json x = {{"name", ""}, {"cat", ""}, {"ph", "X"}, {"ts", 0.0},
            {"dur", 0.0}, {"pid", 0},  {"tid", 0u}, {"args", {{"device", ""}}}};
  std::string& name = x["name"].get_ref<std::string&>();
  std::string& lane = x["cat"].get_ref<std::string&>();
  Json& ts = x["ts"];
  Json& dur = x["dur"];
  Json& pid = x["pid"];
  Json& tid = x["tid"];
  std::string& device = x["args"]["device"].get_ref<std::string&>();
  Context last_ctx{};
  int last_pid = -1;
  for (const Event& e : events) {
    if (last_pid < 0 || !(e.ctx == last_ctx)) {
      last_ctx = e.ctx;
      last_pid = pids.at(e.ctx);
      device = e.ctx.ToString();
    }
    threads->emplace(last_pid, e.thread);
    name = e.name;
    lane = e.lane;
    ts = Micros(int64_t(e.begin_ns - origin));
    dur = Micros(int64_t(e.end_ns >= e.begin_ns ? e.end_ns - e.begin_ns : 0));
    pid = last_pid;
    tid = e.thread;
    trace->Add(x);
  }
}

}  // namespace

std::vector<OpAggregate> Profiler::Aggregate() const {
  std::map<std::string_view, Stats> merged;
  {
    std::lock_guard<std::mutex> registry(impl_->registry_mu);
    for (auto& b : impl_->buffers) {
      std::lock_guard<std::mutex> lock(b->mu);
      for (auto& [name, stats] : b->names) merged[name].Merge(stats);
    }
  }
  std::vector<OpAggregate> out;
  for (auto& [name, s] : merged) {
    if (s.count == 0) continue;
    out.push_back(OpAggregate{std::string(name), s.count, s.total_ns, s.min_ns, s.max_ns});
  }
  return out;
}

namespace {

// The markers and counters: spans, instants and counter samples, each under
// its device's process (memory) or the markers' process.
void AddMarks(const std::vector<Mark>& marks, const std::map<Context, int>& pids, int marker_pid,
              uint64_t origin, TraceWriter* trace, std::set<std::pair<int, uint32_t>>* threads) {
  bool any_marker = false;
  for (const Mark& m : marks) {
    const int pid = m.on_device ? pids.at(m.ctx) : marker_pid;
    any_marker = any_marker || !m.on_device;
    Json e = {{"name", m.name},
              {"cat", m.domain.empty() ? "user" : m.domain},
              {"ph", std::string(1, m.phase)},
              {"ts", Micros(int64_t(m.begin_ns - origin))},
              {"pid", pid},
              {"tid", m.thread}};
    if (m.phase == 'X') e["dur"] = Micros(int64_t(m.end_ns - m.begin_ns));
    if (m.phase == 'i') e["s"] = std::string(1, m.scope);
    if (!m.values.empty()) {
      Json args = Json::object();
      for (const auto& [k, v] : m.values) args[k] = v;
      e["args"] = std::move(args);
    }
    trace->Add(e);
    threads->emplace(pid, m.thread);
  }
  if (any_marker) {
    trace->Add({{"name", "process_name"},
                {"ph", "M"},
                {"pid", marker_pid},
                {"tid", 0},
                {"args", {{"name", "markers"}}}});
  }
}

}  // namespace

std::string Profiler::DumpsChromeTrace() const {
  Snapshot snap;
  {
    std::lock_guard<std::mutex> registry(impl_->registry_mu);
    for (auto& b : impl_->buffers) {
      std::lock_guard<std::mutex> lock(b->mu);
      for (const Chunk& c : b->chunks) {
        snap.events.insert(snap.events.end(), c.events.get(), c.events.get() + c.size);
      }
      for (auto& [name, stats] : b->names) {
        if (stats.count) snap.stats[name].Merge(stats);
      }
      if (b->dropped) {
        snap.first_drop_ns =
            snap.dropped ? std::min(snap.first_drop_ns, b->first_drop_ns) : b->first_drop_ns;
        snap.dropped += b->dropped;
      }
    }
  }
  std::vector<Mark> marks;
  int64_t dropped_marks = 0;
  {
    std::lock_guard<std::mutex> lock(impl_->marks_mu);
    marks = impl_->marks;
    dropped_marks = impl_->dropped_marks;
  }
  bool with_aggregate = aggregate();
  uint64_t origin = impl_->origin_ns.load(std::memory_order_relaxed);

  // pid: rank of the device in Context order among the devices present
  // (devices with memory counters included); user markers after them.
  std::map<Context, int> pids;
  for (const Event& e : snap.events) pids.emplace(e.ctx, 0);
  for (const Mark& m : marks)
    if (m.on_device) pids.emplace(m.ctx, 0);
  int next_pid = 0;
  for (auto& [ctx, pid] : pids) pid = next_pid++;
  const int marker_pid = next_pid;
  std::set<std::pair<int, uint32_t>> threads;
  std::unordered_map<uint32_t, std::string> thread_names;
  {
    std::lock_guard<std::mutex> lock(impl_->thread_names_mu);
    thread_names = impl_->thread_names;
  }

  int64_t max = max_events();
  Json envelope;
  envelope["traceEvents"] = Json::array();
  envelope["displayTimeUnit"] = "ms";
  envelope["otherData"] = {
      {"producer", "tessera"},          {"stored_events", int64_t(snap.events.size())},
      {"dropped_events", snap.dropped}, {"stored_marks", int64_t(marks.size())},
      {"dropped_marks", dropped_marks}, {"max_events", max}};
  if (with_aggregate) {
    Json rows = Json::array();
    for (auto& [name, s] : snap.stats) {
      rows.push_back({{"name", std::string(name)},
                      {"count", s.count},
                      {"total_ns", s.total_ns},
                      {"min_ns", s.min_ns},
                      {"max_ns", s.max_ns}});
    }
    envelope["aggregate"] = std::move(rows);
  }
  TraceWriter trace(envelope, snap.events.size());

  for (auto& [ctx, pid] : pids) {
    trace.Add({{"name", "process_name"},
               {"ph", "M"},
               {"pid", pid},
               {"tid", 0},
               {"args", {{"name", ctx.ToString()}}}});
    trace.Add({{"name", "process_sort_index"},
               {"ph", "M"},
               {"pid", pid},
               {"tid", 0},
               {"args", {{"sort_index", pid}}}});
  }

  AddOpEvents(snap.events, pids, origin, &trace, &threads);
  AddMarks(marks, pids, marker_pid, origin, &trace, &threads);

  // A thread may run ops of several devices (the naive engine does): label
  // it under each device's process.
  for (auto& [pid, tid] : threads) {
    auto it = thread_names.find(tid);
    std::string label = it != thread_names.end() ? it->second : "thread " + std::to_string(tid);
    trace.Add({{"name", "thread_name"},
               {"ph", "M"},
               {"pid", pid},
               {"tid", tid},
               {"args", {{"name", label}}}});
  }

  if (snap.dropped > 0) {
    // Visible on the timeline where the trace stops being complete.
    trace.Add({{"name", "profiler: " + std::to_string(snap.dropped) +
                            " trace events dropped beyond TESSERA_PROFILER_MAX_EVENTS=" +
                            std::to_string(max)},
               {"ph", "i"},
               {"s", "g"},
               {"ts", Micros(int64_t(snap.first_drop_ns - origin))},
               {"pid", 0},
               {"tid", 0}});
  }
  return std::move(trace).Finish();
}

void Profiler::Dump(const std::string& filename) {
  std::string target = filename.empty() ? this->filename() : filename;
  std::string text = DumpsChromeTrace();
  WriteFileAtomically(target, text, "profiler");
}

std::string Profiler::AggregateTable(bool sort_by_total) const {
  std::vector<OpAggregate> rows = Aggregate();
  if (sort_by_total) {
    std::stable_sort(rows.begin(), rows.end(), [](const OpAggregate& a, const OpAggregate& b) {
      return a.total_ns > b.total_ns;
    });
  }
  const char* headers[] = {"Name", "Count", "Total(ms)", "Min(ms)", "Max(ms)", "Mean(ms)"};
  std::vector<std::vector<std::string>> cells;
  for (const OpAggregate& r : rows) {
    cells.push_back({TableName(r.name), std::to_string(r.count), FormatMs(r.total_ns),
                     FormatMs(r.min_ns), FormatMs(r.max_ns), FormatMs(r.mean_ns())});
  }
  size_t width[6];
  for (int i = 0; i < 6; ++i) width[i] = std::strlen(headers[i]);
  for (auto& row : cells) {
    for (int i = 0; i < 6; ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  auto line = [&out, &width](auto get) {
    std::string text;
    for (int i = 0; i < 6; ++i) {
      std::string cell = get(i);
      std::string pad(width[i] - cell.size(), ' ');
      // Names read left to right, numbers line up on the decimal point.
      if (i == 0) {
        text += cell + pad;
      } else {
        text += "  " + pad + cell;
      }
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  };
  line([&headers](int i) { return std::string(headers[i]); });
  for (auto& row : cells) line([&row](int i) { return row[i]; });
  return out;
}

int64_t Profiler::StoredEvents() const {
  std::lock_guard<std::mutex> registry(impl_->registry_mu);
  int64_t n = 0;
  for (auto& b : impl_->buffers) {
    std::lock_guard<std::mutex> lock(b->mu);
    n += b->stored;
  }
  return n;
}

int64_t Profiler::DroppedEvents() const {
  std::lock_guard<std::mutex> registry(impl_->registry_mu);
  int64_t n = 0;
  for (auto& b : impl_->buffers) {
    std::lock_guard<std::mutex> lock(b->mu);
    n += b->dropped;
  }
  return n;
}

void Profiler::RecordMark(Mark mark) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(impl_->marks_mu);
  if (static_cast<int64_t>(impl_->marks.size()) >= max_events()) {
    ++impl_->dropped_marks;
    return;
  }
  impl_->marks.push_back(std::move(mark));
}

namespace {

// The storage layer's memory reports (engine/base/memory_events.h), as
// counters in MiB.
void OnMemory(Context ctx, size_t in_use, size_t pooled) {
  Profiler* p = Profiler::Get();
  if (!p->enabled()) return;
  Mark m;
  m.name = "memory " + ctx.ToString();
  m.domain = "memory";
  m.phase = 'C';
  m.thread = Profiler::ThreadIndex();
  m.begin_ns = m.end_ns = Profiler::NowNs();
  m.values = {{"in_use_MiB", double(in_use) / (1 << 20)},
              {"pooled_MiB", double(pooled) / (1 << 20)}};
  m.on_device = true;
  m.ctx = ctx;
  p->RecordMark(std::move(m));
}

}  // namespace

void Profiler::SetProfileMemory(bool on) {
  impl_->profile_memory.store(on, std::memory_order_relaxed);
  SetMemoryListener(on ? OnMemory : nullptr);
}

bool Profiler::profile_memory() const {
  return impl_->profile_memory.load(std::memory_order_relaxed);
}

void Profiler::Clear() {
  {
    std::lock_guard<std::mutex> lock(impl_->marks_mu);
    impl_->marks.clear();
    impl_->dropped_marks = 0;
  }
  std::lock_guard<std::mutex> registry(impl_->registry_mu);
  // Every buffer is locked at once so that the budget reset below cannot
  // race with a reservation made against the old count.
  std::vector<std::unique_lock<std::mutex>> locks;
  locks.reserve(impl_->buffers.size());
  for (auto& b : impl_->buffers) locks.emplace_back(b->mu);
  for (auto& b : impl_->buffers) {
    b->chunks.clear();
    b->next_chunk = kFirstChunk;
    b->stored = 0;
    b->dropped = 0;
    b->first_drop_ns = 0;
    for (auto& entry : b->names) entry.second = Stats{};
  }
  reserved_events_.store(0, std::memory_order_relaxed);
  impl_->origin_ns.store(enabled() ? NowNs() : 0, std::memory_order_relaxed);
}

}  // namespace tessera::engine
