#include "engine/scheduler/profiler.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "engine/base/error.h"
#include "engine/base/host_sync.h"

using tessera::Context;
using tessera::engine::OpAggregate;
using tessera::engine::Profiler;
using json = nlohmann::json;

namespace {

// The profiler is process-wide: every test starts from, and leaves, a clean
// stopped state (a profiler left running would dump at exit).
struct CleanProfiler {
  Profiler* p = Profiler::Get();
  CleanProfiler() {
    p->SetState(false);
    p->Clear();
    p->SetMaxEvents(1000000);
    p->SetConfig("profile.json", true);
  }
  ~CleanProfiler() {
    p->SetState(false);
    p->Clear();
    p->SetMaxEvents(1000000);
  }
};

std::vector<json> EventsWithPhase(const json& doc, const std::string& ph) {
  std::vector<json> out;
  for (const json& e : doc.at("traceEvents")) {
    if (e.at("ph") == ph) out.push_back(e);
  }
  return out;
}

const OpAggregate* Find(const std::vector<OpAggregate>& rows, const std::string& name) {
  for (const OpAggregate& r : rows) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

std::filesystem::path FreshDir(const std::string& tag) {
  auto dir = std::filesystem::temp_directory_path() /
             ("tessera_profiler_test_" + tag + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE("concurrent recording from four threads aggregates exactly") {
  CleanProfiler clean;
  Profiler* p = clean.p;
  p->SetState(true);
  REQUIRE(p->enabled());

  constexpr int kThreads = 4;
  constexpr uint64_t kOps = 2000;
  uint64_t base = Profiler::NowNs();
  std::vector<std::thread> threads;
  std::set<uint32_t> indices;
  std::vector<uint32_t> index_of(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([p, t, base, &index_of] {
      uint32_t me = Profiler::ThreadIndex();
      CHECK(Profiler::ThreadIndex() == me);  // stable
      index_of[size_t(t)] = me;
      Profiler::SetThreadName("cpu(0) compute " + std::to_string(t));
      for (uint64_t i = 0; i < kOps; ++i) {
        uint64_t dur = 100 + uint64_t(t) * 1000 + i;  // distinct per thread
        p->RecordOp("add", Context::CPU(), "compute", me, base + i, base + i + dur);
        p->RecordOp("mul", Context::CPU(), "compute", me, base + i, base + i + 7);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (uint32_t i : index_of) indices.insert(i);
  CHECK(indices.size() == kThreads);  // distinct per thread

  // The threads have exited: their buffers must still be visible.
  std::vector<OpAggregate> rows = p->Aggregate();
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].name == "add");  // sorted by name
  const OpAggregate* add = Find(rows, "add");
  const OpAggregate* mul = Find(rows, "mul");
  REQUIRE(add);
  REQUIRE(mul);
  uint64_t expect_total = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (uint64_t i = 0; i < kOps; ++i) expect_total += 100 + uint64_t(t) * 1000 + i;
  }
  CHECK(add->count == kThreads * kOps);
  CHECK(add->total_ns == expect_total);
  CHECK(add->min_ns == 100);
  CHECK(add->max_ns == 100 + (kThreads - 1) * 1000 + kOps - 1);
  CHECK(add->mean_ns() == doctest::Approx(double(expect_total) / double(kThreads * kOps)));
  CHECK(mul->count == kThreads * kOps);
  CHECK(mul->total_ns == 7 * kThreads * kOps);
  CHECK(mul->min_ns == 7);
  CHECK(mul->max_ns == 7);
  CHECK(mul->mean_ns() == 7.0);
  CHECK(p->StoredEvents() == int64_t(2 * kThreads * kOps));
  CHECK(p->DroppedEvents() == 0);

  json doc = json::parse(p->DumpsChromeTrace());
  CHECK(EventsWithPhase(doc, "X").size() == 2 * kThreads * kOps);
  std::set<std::string> labels;
  for (const json& m : EventsWithPhase(doc, "M")) {
    if (m.at("name") == "thread_name") labels.insert(m.at("args").at("name").get<std::string>());
  }
  for (int t = 0; t < kThreads; ++t) {
    CHECK(labels.count("cpu(0) compute " + std::to_string(t)) == 1);
  }
}

TEST_CASE("dumps taken while workers record are complete documents") {
  CleanProfiler clean;
  Profiler* p = clean.p;
  p->SetState(true);
  // Bounded work, so the test stays fast under TSan; the dumper runs while
  // the workers are still recording.
  constexpr int kWorkers = 3;
  constexpr int kOps = 3000;
  std::atomic<int> started{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < kWorkers; ++t) {
    workers.emplace_back([p, &started] {
      uint32_t me = Profiler::ThreadIndex();
      started.fetch_add(1);
      for (int i = 0; i < kOps; ++i) {
        uint64_t now = Profiler::NowNs();
        p->RecordOp("busy", Context::CPU(), "compute", me, now, now + 1);
      }
    });
  }
  while (started.load() < kWorkers) std::this_thread::yield();
  size_t last = 0;
  for (int i = 0; i < 5; ++i) {
    json doc = json::parse(p->DumpsChromeTrace());
    size_t n = EventsWithPhase(doc, "X").size();
    CHECK(n >= last);  // each dump holds everything recorded so far
    last = n;
    p->Aggregate();
    p->StoredEvents();
  }
  for (auto& w : workers) w.join();
  json doc = json::parse(p->DumpsChromeTrace());
  CHECK(EventsWithPhase(doc, "X").size() == kWorkers * kOps);
}

TEST_CASE("repeated dumps are each valid and cumulative") {
  CleanProfiler clean;
  Profiler* p = clean.p;
  p->SetState(true);
  uint32_t me = Profiler::ThreadIndex();
  uint64_t t0 = Profiler::NowNs();
  p->RecordOp("conv", Context::CPU(), "compute", me, t0 + 1000, t0 + 3500);
  p->RecordOp("copy", Context::GPU(1), "copy", me, t0 + 4000, t0 + 5000);
  p->RecordOp("conv", Context::GPU(0), "compute", me, t0 + 6000, t0 + 6001);

  json first = json::parse(p->DumpsChromeTrace());
  CHECK(first.at("displayTimeUnit") == "ms");
  auto xs = EventsWithPhase(first, "X");
  REQUIRE(xs.size() == 3);
  for (const json& e : xs) {
    CHECK(e.at("ts").is_number());
    CHECK(e.at("ts").get<double>() >= 0.0);  // relative to the profiler's start
    CHECK(e.at("tid") == me);
  }
  // Devices map to processes in Context order: cpu(0), gpu(0), gpu(1).
  const json& conv = xs[0];
  CHECK(conv.at("name") == "conv");
  CHECK(conv.at("cat") == "compute");
  CHECK(conv.at("dur").get<double>() == doctest::Approx(2.5));  // microseconds
  CHECK(conv.at("pid") == 0);
  CHECK(conv.at("args").at("device") == "cpu(0)");
  CHECK(xs[1].at("pid") == 2);
  CHECK(xs[1].at("cat") == "copy");
  CHECK(xs[1].at("args").at("device") == "gpu(1)");
  CHECK(xs[2].at("pid") == 1);
  CHECK(xs[2].at("dur").get<double>() == doctest::Approx(0.001));
  std::set<std::string> processes;
  for (const json& m : EventsWithPhase(first, "M")) {
    if (m.at("name") == "process_name") processes.insert(m.at("args").at("name"));
  }
  CHECK(processes == std::set<std::string>{"cpu(0)", "gpu(0)", "gpu(1)"});
  CHECK(first.at("otherData").at("stored_events") == 3);
  CHECK(first.at("otherData").at("dropped_events") == 0);
  REQUIRE(first.contains("aggregate"));
  CHECK(first.at("aggregate").size() == 2);

  uint64_t t1 = Profiler::NowNs();
  p->RecordOp("relu", Context::CPU(), "priority", me, t1, t1 + 10);
  json second = json::parse(p->DumpsChromeTrace());
  auto xs2 = EventsWithPhase(second, "X");
  REQUIRE(xs2.size() == 4);
  std::multiset<std::string> names;
  for (const json& e : xs2) names.insert(e.at("name"));
  CHECK(names == std::multiset<std::string>{"conv", "conv", "copy", "relu"});

  p->SetConfig("profile.json", false);
  json third = json::parse(p->DumpsChromeTrace());
  CHECK_FALSE(third.contains("aggregate"));
}

TEST_CASE("names that need escaping survive the round trip") {
  CleanProfiler clean;
  Profiler* p = clean.p;
  p->SetState(true);
  const std::string weird = "we\"ird\\na\nme\t\x01/\xc3\xa9";
  uint64_t t0 = Profiler::NowNs();
  p->RecordOp(weird.c_str(), Context::CPU(), "com\"pute", 0, t0, t0 + 5);
  p->RecordOp("bad utf8 \xff\xfe", Context::CPU(), "compute", 0, t0, t0 + 5);
  p->RecordOp(nullptr, Context::CPU(), nullptr, 0, t0, t0 + 5);
  std::string text;
  REQUIRE_NOTHROW(text = p->DumpsChromeTrace());
  json doc = json::parse(text);
  auto xs = EventsWithPhase(doc, "X");
  REQUIRE(xs.size() == 3);
  CHECK(xs[0].at("name") == weird);
  CHECK(xs[0].at("cat") == "com\"pute");
  CHECK(xs[1].at("name").get<std::string>().rfind("bad utf8 ", 0) == 0);
  CHECK(xs[2].at("name") == "unnamed");
  // The table stays one line per row whatever the name holds.
  std::string table = p->AggregateTable();
  CHECK(std::count(table.begin(), table.end(), '\n') == 4);
}

TEST_CASE("stop and start") {
  CleanProfiler clean;
  Profiler* p = clean.p;
  CHECK_FALSE(p->enabled());
  uint64_t t0 = Profiler::NowNs();
  p->RecordOp("ignored", Context::CPU(), "compute", 0, t0, t0 + 1);
  p->SetState(true);
  CHECK(p->enabled());
  p->RecordOp("kept", Context::CPU(), "compute", 0, t0, t0 + 1);
  p->SetState(false);
  CHECK_FALSE(p->enabled());
  p->RecordOp("ignored", Context::CPU(), "compute", 0, t0, t0 + 1);
  p->SetState(true);
  p->RecordOp("kept", Context::CPU(), "compute", 0, t0, t0 + 1);
  auto rows = p->Aggregate();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].name == "kept");
  CHECK(rows[0].count == 2);
  CHECK(p->StoredEvents() == 2);
}

TEST_CASE("host synchronisations are counted always and traced while recording") {
  CleanProfiler clean;
  Profiler* p = clean.p;
  const uint64_t before = tessera::HostSyncCount();
  tessera::ReportHostSync("not traced", 1000);
  CHECK(tessera::HostSyncCount() == before + 1);
  p->SetState(true);
  tessera::ReportHostSync("take: indices", 2000);
  p->SetState(false);
  CHECK(tessera::HostSyncCount() == before + 2);
  CHECK(p->Aggregate().empty());  // not ops: the op table is unchanged
  json doc = json::parse(p->DumpsChromeTrace());
  std::vector<json> spans;
  for (const json& e : EventsWithPhase(doc, "X"))
    if (e.at("cat") == "sync") spans.push_back(e);
  REQUIRE(spans.size() == 1);
  CHECK(spans[0].at("name") == "host sync: take: indices");
  CHECK(spans[0].at("dur").get<double>() == doctest::Approx(2.0));
}

TEST_CASE("Clear forgets events and aggregates") {
  CleanProfiler clean;
  Profiler* p = clean.p;
  p->SetState(true);
  uint64_t t0 = Profiler::NowNs();
  for (int i = 0; i < 10; ++i) p->RecordOp("op", Context::CPU(), "compute", 0, t0, t0 + 3);
  REQUIRE(p->StoredEvents() == 10);
  p->Clear();
  CHECK(p->enabled());  // settings stay
  CHECK(p->StoredEvents() == 0);
  CHECK(p->Aggregate().empty());
  json doc = json::parse(p->DumpsChromeTrace());
  CHECK(EventsWithPhase(doc, "X").empty());

  uint64_t t1 = Profiler::NowNs();
  p->RecordOp("after", Context::CPU(), "compute", 0, t1, t1 + 4);
  auto rows = p->Aggregate();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].name == "after");
  CHECK(rows[0].total_ns == 4);
}

TEST_CASE("the event cap drops trace events but keeps aggregates") {
  CleanProfiler clean;
  Profiler* p = clean.p;
  p->SetState(true);
  p->SetMaxEvents(10);
  CHECK(p->max_events() == 10);
  uint64_t t0 = Profiler::NowNs();
  for (int i = 0; i < 25; ++i) p->RecordOp("op", Context::CPU(), "compute", 0, t0, t0 + 2);
  CHECK(p->StoredEvents() == 10);
  CHECK(p->DroppedEvents() == 15);
  auto rows = p->Aggregate();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].count == 25);
  CHECK(rows[0].total_ns == 50);

  json doc = json::parse(p->DumpsChromeTrace());
  CHECK(EventsWithPhase(doc, "X").size() == 10);
  CHECK(doc.at("otherData").at("dropped_events") == 15);
  CHECK(doc.at("otherData").at("max_events") == 10);
  auto instants = EventsWithPhase(doc, "i");
  REQUIRE(instants.size() == 1);
  CHECK(instants[0].at("name").get<std::string>().find("15 trace events dropped") !=
        std::string::npos);

  // Clear gives the budget back.
  p->Clear();
  for (int i = 0; i < 4; ++i) p->RecordOp("op", Context::CPU(), "compute", 0, t0, t0 + 2);
  CHECK(p->StoredEvents() == 4);
  CHECK(p->DroppedEvents() == 0);

  // From several threads the cap holds for the process.
  p->Clear();
  p->SetMaxEvents(50);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([p, t0] {
      for (int i = 0; i < 100; ++i) p->RecordOp("op", Context::CPU(), "compute", 0, t0, t0 + 1);
    });
  }
  for (auto& th : threads) th.join();
  CHECK(p->StoredEvents() <= 50);
  CHECK(p->StoredEvents() > 0);
  CHECK(p->StoredEvents() + p->DroppedEvents() == 400);
  CHECK(p->Aggregate().at(0).count == 400);
}

TEST_CASE("Dump writes the file atomically") {
  CleanProfiler clean;
  Profiler* p = clean.p;
  auto dir = FreshDir("dump");
  auto file = dir / "trace.json";
  p->SetConfig(file.string());
  CHECK(p->filename() == file.string());
  p->SetState(true);
  uint64_t t0 = Profiler::NowNs();
  p->RecordOp("a", Context::CPU(), "compute", 0, t0, t0 + 10);
  p->Dump();
  p->RecordOp("b", Context::CPU(), "compute", 0, t0, t0 + 10);
  p->Dump();  // a second dump replaces the first with a complete document

  std::vector<std::string> entries;
  for (auto& e : std::filesystem::directory_iterator(dir)) {
    entries.push_back(e.path().filename().string());
  }
  CHECK(entries == std::vector<std::string>{"trace.json"});  // no temp left behind
  std::ifstream in(file);
  json doc = json::parse(in);
  CHECK(EventsWithPhase(doc, "X").size() == 2);

  // An explicit name overrides the configured one for this dump only.
  auto other = dir / "other.json";
  p->Dump(other.string());
  CHECK(std::filesystem::exists(other));
  CHECK(p->filename() == file.string());

  // A dump that cannot be written throws and leaves nothing behind.
  auto missing = dir / "no_such_dir" / "x.json";
  CHECK_THROWS_AS(p->Dump(missing.string()), tessera::Error);
  CHECK_FALSE(std::filesystem::exists(dir / "no_such_dir"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("AggregateTable lists every op name in aligned columns") {
  CleanProfiler clean;
  Profiler* p = clean.p;
  p->SetState(true);
  uint64_t t0 = Profiler::NowNs();
  p->RecordOp("small", Context::CPU(), "compute", 0, t0, t0 + 1000000);  // 1 ms
  p->RecordOp("a_much_longer_op_name", Context::CPU(), "compute", 0, t0, t0 + 3000000);
  p->RecordOp("a_much_longer_op_name", Context::CPU(), "compute", 0, t0, t0 + 5000000);

  std::string table = p->AggregateTable();
  std::istringstream lines(table);
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(line);
  REQUIRE(rows.size() == 3);
  for (const char* h : {"Name", "Count", "Total(ms)", "Min(ms)", "Max(ms)", "Mean(ms)"}) {
    CHECK(rows[0].find(h) != std::string::npos);
  }
  // Sorted by total time; numbers right-aligned so every line ends together.
  CHECK(rows[1].rfind("a_much_longer_op_name", 0) == 0);
  CHECK(rows[2].rfind("small", 0) == 0);
  CHECK(rows[1].find("8.0000") != std::string::npos);  // total
  CHECK(rows[1].find("4.0000") != std::string::npos);  // mean
  CHECK(rows[2].find("1.0000") != std::string::npos);
  CHECK(rows[0].size() == rows[1].size());
  CHECK(rows[1].size() == rows[2].size());
  CHECK(rows[0].find("Count") + 5 == rows[1].find(" 2 ") + 2);  // right-aligned count

  std::string by_name = p->AggregateTable(false);
  CHECK(by_name.find("a_much_longer_op_name") < by_name.find("small"));
}
