// Randomized workloads against a sequential reference: if the engine ever
// runs two conflicting ops out of push order, or lets a writer overlap a
// reader, the final values differ (and ThreadSanitizer reports the race).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "engine/scheduler/engine.h"

using namespace tessera;
using namespace tessera::engine;

namespace {

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdULL;
  return h ^ (h >> 33);
}

// Finishes async ops on its own thread, as a device callback or an I/O
// thread would.
class Completer {
 public:
  Completer() : thread_([this] { Loop(); }) {}
  ~Completer() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  // Notifies under the lock: once the posted work runs, the op completes and
  // the test may destroy the Completer, so nothing may touch it afterwards.
  void Post(std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(fn));
    cv_.notify_one();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      auto fn = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      fn();
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

// One variable's data: a cell only ops holding the variable touch.
struct Cell {
  uint64_t value;
  uint64_t writes = 0;  // writes seen, to check Engine::VarVersion
};

// Op `id` reads every cell it names and writes a mix of them into each cell it
// writes. Read and write lists are the raw, unnormalised lists; a cell in both
// counts as written.
void Apply(uint64_t id, const std::vector<Cell*>& reads, const std::vector<Cell*>& writes) {
  std::vector<Cell*> all(reads);
  all.insert(all.end(), writes.begin(), writes.end());
  std::sort(all.begin(), all.end(), [](Cell* a, Cell* b) { return a->value < b->value; });
  uint64_t h = id;
  for (Cell* c : all) h = Mix(h, c->value);
  std::vector<Cell*> w(writes);
  std::sort(w.begin(), w.end());
  w.erase(std::unique(w.begin(), w.end()), w.end());
  for (Cell* c : w) {
    c->value = Mix(h, c->value);
    ++c->writes;
  }
}

struct Workload {
  int num_slots = 120;  // variables alive at once
  int num_fixed = 10;   // slots that persistent operators use; never deleted
  int num_ops = 10000;
  uint64_t seed = 1;
};

// Everything the run produced, compared between engine and reference.
struct Outcome {
  std::vector<uint64_t> final_values;    // per slot, at the end
  std::vector<uint64_t> deleted_values;  // per deletion, in push order
  std::vector<uint64_t> waited_values;   // read right after each mid-run wait
  bool versions_ok = true;
};

// Runs the workload either on `eng` or, when null, sequentially.
Outcome Run(const Workload& wl, Engine* eng) {
  std::mt19937_64 rng(wl.seed);
  Completer completer;
  struct Slot {
    std::unique_ptr<Cell> cell;
    VarHandle var = nullptr;
  };
  std::vector<Slot> slots(wl.num_slots);
  uint64_t next_cell = 1;
  auto fresh = [&](Slot& s) {
    s.cell = std::make_unique<Cell>(Cell{next_cell++ * 0x12345, 0});
    s.var = eng ? eng->NewVariable() : nullptr;
  };
  for (Slot& s : slots) fresh(s);

  Outcome out;
  std::vector<std::unique_ptr<uint64_t>> deleted;  // filled by delete functions
  std::vector<std::unique_ptr<Cell>> retired;      // cells of deleted variables
  std::mutex version_mu;

  // Persistent operators over the fixed slots.
  struct Persistent {
    std::vector<int> reads, writes;
    OprHandle handle = nullptr;
  };
  std::vector<Persistent> persistent(4);
  for (size_t p = 0; p < persistent.size(); ++p) {
    Persistent& op = persistent[p];
    for (int k = 0; k < 2; ++k) op.reads.push_back(int(rng() % wl.num_fixed));
    op.writes.push_back(int(rng() % wl.num_fixed));
    if (!eng) continue;
    std::vector<Cell*> r, w;
    std::vector<VarHandle> rv, wv;
    for (int i : op.reads) r.push_back(slots[i].cell.get()), rv.push_back(slots[i].var);
    for (int i : op.writes) w.push_back(slots[i].cell.get()), wv.push_back(slots[i].var);
    uint64_t id = 1000000 + p;
    op.handle = eng->NewOperator(
        [id, r, w](RunContext, CallbackOnComplete done) {
          Apply(id, r, w);
          done();
        },
        rv, wv, FnProperty::kNormal, "persistent");
  }

  for (int i = 0; i < wl.num_ops; ++i) {
    int kind = int(rng() % 100);
    int priority = int(rng() % 3);  // drawn on both paths so they stay in step
    if (kind < 4) {                 // persistent operator
      Persistent& op = persistent[rng() % persistent.size()];
      if (eng) {
        eng->Push(op.handle, Context::CPU(), priority);
      } else {
        std::vector<Cell*> r, w;
        for (int k : op.reads) r.push_back(slots[k].cell.get());
        for (int k : op.writes) w.push_back(slots[k].cell.get());
        Apply(1000000 + (&op - persistent.data()), r, w);
      }
      continue;
    }
    if (kind >= 96) {  // wait for a variable, then read its cell on this thread
      Slot& slot = slots[rng() % wl.num_slots];
      WaitMode mode = kind % 2 ? WaitMode::kRead : WaitMode::kWrite;
      if (eng) eng->WaitForVar(slot.var, mode);
      // Every write pushed before has finished, and this thread pushes the
      // next: reading the cell here is race-free and must match the reference.
      out.waited_values.push_back(slot.cell->value);
      continue;
    }
    if (kind < 7) {  // delete a variable and put a fresh one in its slot
      int s = wl.num_fixed + int(rng() % (wl.num_slots - wl.num_fixed));
      Slot& slot = slots[s];
      deleted.push_back(std::make_unique<uint64_t>(0));
      uint64_t* record = deleted.back().get();
      Cell* cell = slot.cell.get();
      if (eng) {
        VarHandle var = slot.var;
        bool* ok = &out.versions_ok;
        eng->DeleteVariable(
            [record, cell, var, ok, &version_mu](RunContext) {
              *record = cell->value;
              std::lock_guard<std::mutex> lock(version_mu);
              if (Engine::VarVersion(var) != cell->writes) *ok = false;
            },
            Context::CPU(), var);
      } else {
        *record = cell->value;
      }
      retired.push_back(std::move(slot.cell));
      fresh(slot);
      continue;
    }
    // A random op: 0-3 reads and 1-3 writes, drawn with replacement.
    std::vector<int> r(rng() % 4), w(1 + rng() % 3);
    for (int& k : r) k = int(rng() % wl.num_slots);
    for (int& k : w) k = int(rng() % wl.num_slots);
    if (rng() % 10 == 0 && !r.empty()) w.push_back(r[0]);  // read and written
    std::vector<Cell*> rc, wc;
    std::vector<VarHandle> rv, wv;
    for (int k : r) rc.push_back(slots[k].cell.get()), rv.push_back(slots[k].var);
    for (int k : w) wc.push_back(slots[k].cell.get()), wv.push_back(slots[k].var);
    uint64_t id = uint64_t(i);
    if (!eng) {
      Apply(id, rc, wc);
    } else if (kind < 40) {  // async, finished on another thread
      Completer* c = &completer;
      eng->PushAsync(
          [id, rc, wc, c](RunContext, CallbackOnComplete done) {
            c->Post([id, rc, wc, done] {
              Apply(id, rc, wc);
              done();
            });
          },
          Context::CPU(), rv, wv, FnProperty::kNormal, priority, "async");
    } else if (kind < 47 &&
               eng->TryRunNow([&] { Apply(id, rc, wc); }, rv, wv, "now")) {  // run here
    } else {
      FnProperty prop = kind < 50   ? FnProperty::kCopyCPU
                        : kind < 55 ? FnProperty::kCPUPrioritized
                                    : FnProperty::kNormal;
      eng->PushSync([id, rc, wc](RunContext) { Apply(id, rc, wc); }, Context::CPU(), rv, wv, prop,
                    priority, "sync");
    }
  }
  if (eng) {
    eng->WaitForAll();
    for (Persistent& op : persistent) eng->DeleteOperator(op.handle);
    for (Slot& s : slots)
      if (Engine::VarVersion(s.var) != s.cell->writes) out.versions_ok = false;
    for (Slot& s : slots) eng->DeleteVariable(nullptr, Context::CPU(), s.var);
    eng->WaitForAll();
  }
  for (Slot& s : slots) out.final_values.push_back(s.cell->value);
  for (auto& d : deleted) out.deleted_values.push_back(*d);
  return out;
}

void CheckAgainstReference(EngineType type, int cpu_workers) {
  EngineOptions opts;
  opts.cpu_workers = cpu_workers;
  for (uint64_t seed : {1, 2, 3}) {
    CAPTURE(seed);
    Workload wl;
    wl.seed = seed;
    Outcome want = Run(wl, nullptr);
    auto eng = CreateEngine(type, opts);
    Outcome got = Run(wl, eng.get());
    CHECK(got.versions_ok);
    CHECK(got.final_values == want.final_values);
    CHECK(got.deleted_values == want.deleted_values);
    CHECK(got.waited_values == want.waited_values);
    CHECK(want.waited_values.size() > 100);   // the workload did wait mid-run
    CHECK(want.deleted_values.size() > 100);  // the workload did delete variables
  }
}

}  // namespace

TEST_CASE("threaded engine matches sequential execution (1 worker)") {
  CheckAgainstReference(EngineType::kThreaded, 1);
}

TEST_CASE("threaded engine matches sequential execution (4 workers)") {
  CheckAgainstReference(EngineType::kThreaded, 4);
}

TEST_CASE("naive engine matches sequential execution") {
  CheckAgainstReference(EngineType::kNaive, 1);
}

TEST_CASE("pushes from several threads at once keep each thread's order") {
  for (EngineType type : {EngineType::kThreaded, EngineType::kNaive}) {
    EngineOptions opts;
    opts.cpu_workers = 3;
    auto eng = CreateEngine(type, opts);
    constexpr int kThreads = 4, kOps = 3000;
    VarHandle shared = eng->NewVariable();
    uint64_t shared_count = 0;  // every thread writes it: writes serialise
    std::vector<VarHandle> own(kThreads);
    std::vector<int64_t> last(kThreads, -1);
    std::vector<int> out_of_order(kThreads, 0);
    for (auto& v : own) v = eng->NewVariable();
    std::vector<std::thread> pushers;
    for (int t = 0; t < kThreads; ++t) {
      pushers.emplace_back([&, t] {
        for (int k = 0; k < kOps; ++k) {
          if (k % 3 == 0)
            eng->PushSync([&shared_count](RunContext) { ++shared_count; }, Context::CPU(), {own[t]},
                          {shared});
          eng->PushSync(
              [&, t, k](RunContext) {
                if (last[t] != k - 1) ++out_of_order[t];
                last[t] = k;
              },
              Context::CPU(), {shared}, {own[t]});
        }
      });
    }
    for (auto& p : pushers) p.join();
    eng->WaitForAll();
    CHECK(shared_count == uint64_t(kThreads) * ((kOps + 2) / 3));
    CHECK(Engine::VarVersion(shared) == shared_count);
    for (int t = 0; t < kThreads; ++t) {
      CHECK(out_of_order[t] == 0);
      CHECK(last[t] == kOps - 1);
      CHECK(Engine::VarVersion(own[t]) == uint64_t(kOps));
    }
  }
}

// Two threads push ops naming the same variables in opposite roles. Each
// push must enter every queue as one step: appended one variable at a time,
// op A could queue behind B on one variable and B behind A on the other,
// and neither would ever run.
TEST_CASE("concurrent pushes sharing variables in opposite roles never deadlock") {
  for (EngineType type : {EngineType::kThreaded, EngineType::kNaive}) {
    EngineOptions opts;
    opts.cpu_workers = 2;
    auto eng = CreateEngine(type, opts);
    constexpr int kOps = 20000;
    VarHandle a = eng->NewVariable(), b = eng->NewVariable();
    uint64_t ra = 0, rb = 0;  // written only under the engine's rule
    std::atomic<bool> go{false};
    auto pusher = [&](VarHandle read, VarHandle write, uint64_t* cell) {
      while (!go.load()) std::this_thread::yield();
      for (int k = 0; k < kOps; ++k)
        eng->PushSync([cell](RunContext) { ++*cell; }, Context::CPU(), {read}, {write});
    };
    std::thread t1(pusher, b, a, &ra), t2(pusher, a, b, &rb);
    go.store(true);
    t1.join();
    t2.join();
    eng->WaitForAll();
    CHECK(ra == uint64_t(kOps));
    CHECK(rb == uint64_t(kOps));
    CHECK(Engine::VarVersion(a) == uint64_t(kOps));
    CHECK(Engine::VarVersion(b) == uint64_t(kOps));
  }
}

// Several threads push random ops on a few shared variables (duplicates and
// variables both read and written included). There is no sequential
// reference for concurrent pushers, but there must be one push order that
// keeps each thread's order and that every variable followed: each op logs
// itself on the variables it uses when it runs, and the graph of each
// thread's order plus each variable's conflicts (write after anything, read
// after a write) must have no cycle. Pushes that entered their variables'
// queues one variable at a time made this hang within a run or two (a cycle
// of ops each waiting for the next); the cycle check covers the orders a
// run that does finish took.
TEST_CASE("concurrent random pushes follow one push order") {
  for (EngineType type : {EngineType::kThreaded, EngineType::kNaive}) {
    for (uint64_t seed : {1, 2, 3}) {
      EngineOptions opts;
      opts.cpu_workers = 2;
      auto eng = CreateEngine(type, opts);
      constexpr int kThreads = 3, kOps = 2000, kVars = 6;
      std::vector<VarHandle> vars(kVars);
      for (auto& v : vars) v = eng->NewVariable();
      struct Use {  // one op's use of one variable
        int op;
        bool write;
      };
      std::vector<std::vector<Use>> log(kVars);  // per variable, in run order
      std::vector<std::mutex> log_mu(kVars);     // readers of one version run at once
      std::vector<uint64_t> writes(kVars, 0);
      auto pusher = [&](int t) {
        std::mt19937_64 rng(seed * 100 + t);
        for (int k = 0; k < kOps; ++k) {
          std::vector<VarHandle> reads, mutates;
          for (int n = rng() % 3; n > 0; --n) reads.push_back(vars[rng() % kVars]);
          for (int n = rng() % 3; n > 0; --n) mutates.push_back(vars[rng() % kVars]);
          // What the engine must hold: each variable once, written if named
          // as written at all. (variable index, written)
          std::vector<std::pair<int, bool>> holds;
          for (int i = 0; i < kVars; ++i) {
            bool w = std::count(mutates.begin(), mutates.end(), vars[i]) > 0;
            bool r = std::count(reads.begin(), reads.end(), vars[i]) > 0;
            if (w || r) holds.emplace_back(i, w);
          }
          const int id = t * kOps + k;
          eng->PushSync(
              [&, holds, id](RunContext) {
                for (auto [v, write] : holds) {
                  std::lock_guard<std::mutex> lock(log_mu[v]);
                  log[v].push_back({id, write});
                  writes[v] += write;
                }
              },
              Context::CPU(), reads, mutates);
        }
      };
      std::vector<std::thread> threads;
      for (int t = 0; t < kThreads; ++t) threads.emplace_back(pusher, t);
      for (auto& th : threads) th.join();
      eng->WaitForAll();

      const int n = kThreads * kOps;
      std::vector<std::vector<int>> next(n);
      for (int id = 0; id < n; ++id)
        if (id % kOps != kOps - 1) next[id].push_back(id + 1);  // each thread's order
      for (int v = 0; v < kVars; ++v) {
        int last_write = -1;
        std::vector<int> reads_since;
        for (const Use& u : log[v]) {
          if (u.write) {
            for (int r : reads_since) next[r].push_back(u.op);
            if (reads_since.empty() && last_write >= 0) next[last_write].push_back(u.op);
            reads_since.clear();
            last_write = u.op;
          } else {
            if (last_write >= 0) next[last_write].push_back(u.op);
            reads_since.push_back(u.op);
          }
        }
        CHECK(Engine::VarVersion(vars[v]) == writes[v]);
      }
      // Kahn's algorithm: every op must come out.
      std::vector<int> indegree(n, 0), ready;
      for (const auto& out : next)
        for (int m : out) ++indegree[m];
      for (int id = 0; id < n; ++id)
        if (indegree[id] == 0) ready.push_back(id);
      int ordered = 0;
      while (!ready.empty()) {
        int id = ready.back();
        ready.pop_back();
        ++ordered;
        for (int m : next[id])
          if (--indegree[m] == 0) ready.push_back(m);
      }
      CHECK(ordered == n);
      for (VarHandle v : vars) eng->DeleteVariable({}, Context::CPU(), v);
      eng->WaitForAll();
    }
  }
}
