// Engine benchmarks: how fast the dependency engine schedules work that does
// nothing, so that what is measured is the scheduling itself. Each workload
// runs on the threaded engine, the naive engine and, when oneTBB is found, on
// a flow-graph peer doing the same dependency bookkeeping (tbb_flow_engine.h).
//
// stdout carries only figures, one per line, `name: value unit`; notes go to
// stderr. Each figure is the best of several repetitions after one warm-up
// run: on a shared machine, noise only ever makes a run slower, so the best
// run is the most repeatable estimate of what the code itself costs. The
// threaded engine and the TBB peer take turns, repetition by repetition, so
// that a burst of noise cannot favour one of them.
//
// TESSERA_BENCH_SCALE (default 1) multiplies every workload size, for a quick
// check (0.01) or steadier numbers (4).

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/base/context.h"
#include "engine/scheduler/engine.h"

#if TESSERA_HAVE_TBB
#include <oneapi/tbb/flow_graph.h>

#include "tbb_flow_engine.h"
#endif

namespace {

using tessera::Context;
using tessera::RunContext;
using tessera::engine::CallbackOnComplete;
using tessera::engine::Engine;
using tessera::engine::EngineType;
using tessera::engine::OprHandle;
using tessera::engine::VarHandle;

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Sizes {
  int64_t independent = 0;  // ops per independent-ops run
  int64_t chain = 0;        // ops per chain run
  int64_t round_trips = 0;  // push + wait pairs per round-trip run
  int reps = 0;             // timed repetitions after one warm-up
};

Sizes ReadSizes() {
  double scale = 1.0;
  if (const char* s = std::getenv("TESSERA_BENCH_SCALE")) {
    char* end = nullptr;
    scale = std::strtod(s, &end);
    if (end == s || *end != '\0' || !(scale > 0)) {
      std::fprintf(stderr, "TESSERA_BENCH_SCALE must be a positive number, not '%s'\n", s);
      std::exit(2);
    }
  }
  auto scaled = [scale](double n) { return std::max<int64_t>(1, std::llround(n * scale)); };
  // Sized so that the whole binary takes well under a minute on two cores.
  return {scaled(500'000), scaled(300'000), scaled(20'000), 7};
}

class Report {
 public:
  void Print(const std::string& name, double value, const char* unit) {
    figures_[name] = value;
    std::printf("%s: %.3g %s\n", name.c_str(), value, unit);
    std::fflush(stdout);
  }
  double Get(const std::string& name) const {
    auto it = figures_.find(name);
    return it == figures_.end() ? std::nan("") : it->second;
  }

 private:
  std::map<std::string, double> figures_;
};

// The schedulers behind one thin interface, so that each workload below is
// written once and every side does exactly the same pushes.
class EngineSide {
 public:
  using Var = VarHandle;
  explicit EngineSide(Engine* engine) : engine_(engine) {}
  Var NewVar() { return engine_->NewVariable(); }
  void DeleteVar(Var v) { engine_->DeleteVariable({}, kCpu, v); }
  void PushWrite(Var v) {
    engine_->PushSync([](RunContext) {}, kCpu, {}, {v});
  }
  void PushNoVars() {
    engine_->PushSync([](RunContext) {}, kCpu, {}, {});
  }
  void WaitVar(Var v) { engine_->WaitForVar(v); }
  void WaitAll() { engine_->WaitForAll(); }
  Engine* engine() { return engine_; }

 private:
  static constexpr Context kCpu = Context::CPU();
  Engine* engine_;
};

#if TESSERA_HAVE_TBB
using tessera::bench::TbbFlowEngine;

class TbbSide {
 public:
  using Var = TbbFlowEngine::VarHandle;
  Var NewVar() { return engine_.NewVariable(); }
  void DeleteVar(Var v) { engine_.DeleteVariable(v); }
  void PushWrite(Var v) {
    engine_.PushSync([] {}, {}, {&v, 1});
  }
  void PushNoVars() {
    engine_.PushSync([] {}, {}, {});
  }
  // A flow graph can only wait for all of its work: the nearest thing it
  // has to waiting for one variable.
  void WaitVar(Var) { engine_.WaitForAll(); }
  void WaitAll() { engine_.WaitForAll(); }

 private:
  TbbFlowEngine engine_;
};
#endif

// N no-op ops, each writing its own variable: nothing orders them.
template <typename Side>
double IndependentOps(Side& side, std::span<const typename Side::Var> vars) {
  auto t0 = Clock::now();
  for (auto v : vars) side.PushWrite(v);
  side.WaitAll();
  return SecondsSince(t0);
}

template <typename Side>
double IndependentOpsNoVars(Side& side, int64_t n) {
  auto t0 = Clock::now();
  for (int64_t i = 0; i < n; ++i) side.PushNoVars();
  side.WaitAll();
  return SecondsSince(t0);
}

// As IndependentOps, half of the ops pushed from each of two threads. The
// threads exist before the clock starts, so their creation is not timed.
template <typename Side>
double IndependentOpsTwoPushers(Side& side, std::span<const typename Side::Var> vars) {
  std::atomic<bool> go{false};
  auto push_half = [&](std::span<const typename Side::Var> half) {
    go.wait(false);
    for (auto v : half) side.PushWrite(v);
  };
  size_t mid = vars.size() / 2;
  std::thread a(push_half, vars.first(mid));
  std::thread b(push_half, vars.subspan(mid));
  auto t0 = Clock::now();
  go.store(true);
  go.notify_all();
  a.join();
  b.join();
  side.WaitAll();
  return SecondsSince(t0);
}

// N no-op ops all writing one variable: each waits for the one before, so
// this measures the latency from one op's end to the next one's start.
template <typename Side>
double Chain(Side& side, typename Side::Var v, int64_t n) {
  auto t0 = Clock::now();
  for (int64_t i = 0; i < n; ++i) side.PushWrite(v);
  side.WaitAll();
  return SecondsSince(t0);
}

// K times: push one op writing v, then wait for v.
template <typename Side>
double RoundTrips(Side& side, typename Side::Var v, int64_t k) {
  auto t0 = Clock::now();
  for (int64_t i = 0; i < k; ++i) {
    side.PushWrite(v);
    side.WaitVar(v);
  }
  return SecondsSince(t0);
}

// One contestant in a measurement: a scheduler, the prefix of its figures and
// the variables made for it (one per independent op).
template <typename Side>
struct Contender {
  Side* side;
  std::string prefix;
  std::vector<typename Side::Var> vars;
};

template <typename Side>
Contender<Side> MakeContender(Side* side, std::string prefix, int64_t n_vars) {
  Contender<Side> c{side, std::move(prefix), std::vector<typename Side::Var>(n_vars)};
  for (auto& v : c.vars) v = side->NewVar();
  return c;
}

template <typename Side>
void DeleteVars(Contender<Side>& c) {
  for (auto v : c.vars) c.side->DeleteVar(v);
  c.vars.clear();
  c.side->WaitAll();
}

// Lets the threads of whatever ran last (engine workers, TBB workers that
// spin a while before they sleep) go idle before the next timed run. TBB's
// workers measurably slow the next run for more than 20 ms on this class of
// machine; 150 ms lets both sides start from idle threads.
void Settle() {
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
}

enum class Unit { kRate, kLatency };

// Runs `run(contender)` for each contender, one warm-up each, then `reps`
// rounds that take the contenders in turn, so that noise from other
// processes on a shared machine falls on all of them alike rather than on
// whichever happened to run during it. Reports each contender's best run.
template <typename Run, typename... Cs>
void Measure(Report& report, int reps, const std::string& workload, int64_t count, Unit unit,
             Run&& run, Cs&... cs) {
  std::array<double, sizeof...(Cs)> best;
  best.fill(std::numeric_limits<double>::infinity());
  ((Settle(), run(cs)), ...);
  for (int r = 0; r < reps; ++r) {
    size_t i = 0;
    ((Settle(), best[i] = std::min(best[i], run(cs)), ++i), ...);
  }
  size_t i = 0;
  auto print = [&](const std::string& prefix, double seconds) {
    if (unit == Unit::kRate) {
      report.Print(prefix + "." + workload, count / seconds, "ops/s");
    } else {
      report.Print(prefix + "." + workload, seconds / count * 1e6, "us/op");
    }
  };
  (print(cs.prefix, best[i++]), ...);
}

// The workloads every scheduler runs.
template <typename... Cs>
void RunCommon(Report& report, const Sizes& sz, Cs&... cs) {
  Measure(
      report, sz.reps, "independent_ops", sz.independent, Unit::kRate,
      [](auto& c) { return IndependentOps(*c.side, std::span(std::as_const(c.vars))); }, cs...);
  Measure(
      report, sz.reps, "independent_ops_novars", sz.independent, Unit::kRate,
      [&](auto& c) { return IndependentOpsNoVars(*c.side, sz.independent); }, cs...);
  Measure(
      report, sz.reps, "independent_ops_2pushers", sz.independent, Unit::kRate,
      [](auto& c) { return IndependentOpsTwoPushers(*c.side, std::span(std::as_const(c.vars))); },
      cs...);
  Measure(
      report, sz.reps, "chain_latency", sz.chain, Unit::kLatency,
      [&](auto& c) { return Chain(*c.side, c.vars[0], sz.chain); }, cs...);
  Measure(
      report, sz.reps, "waitforvar_roundtrip", sz.round_trips, Unit::kLatency,
      [&](auto& c) { return RoundTrips(*c.side, c.vars[0], sz.round_trips); }, cs...);
}

// A persistent operator writing one variable, pushed N times: a chain whose
// variable lists were normalised once, at NewOperator.
void RunOperatorChain(Report& report, const Sizes& sz, Contender<EngineSide>& c) {
  Engine* engine = c.side->engine();
  VarHandle v = c.vars[0];
  OprHandle op = engine->NewOperator(
      [](RunContext, CallbackOnComplete on_complete) { on_complete(); }, {}, {v});
  Measure(
      report, sz.reps, "operator_chain_latency", sz.chain, Unit::kLatency,
      [&](auto&) {
        auto t0 = Clock::now();
        for (int64_t i = 0; i < sz.chain; ++i) engine->Push(op, Context::CPU());
        engine->WaitForAll();
        return SecondsSince(t0);
      },
      c);
  engine->DeleteOperator(op);
  engine->WaitForAll();
}

#if TESSERA_HAVE_TBB
// For reference, the cheapest way TBB runs N independent closures: one
// function_node of unlimited concurrency receiving each closure as a message.
// It keeps no per-op node and no dependency state at all.
void RunTbbFunctionNode(Report& report, const Sizes& sz) {
  using Fn = std::function<void()>;
  tbb::flow::graph graph;
  tbb::flow::function_node<Fn> node(graph, tbb::flow::unlimited, [](const Fn& fn) {
    fn();
    return tbb::flow::continue_msg();
  });
  struct {
    std::string prefix = "tbb";
  } contender;
  Measure(
      report, sz.reps, "function_node_ops", sz.independent, Unit::kRate,
      [&](auto&) {
        auto t0 = Clock::now();
        for (int64_t i = 0; i < sz.independent; ++i) node.try_put(Fn([] {}));
        graph.wait_for_all();
        return SecondsSince(t0);
      },
      contender);
}
#endif

}  // namespace

int main() {
  const Sizes sz = ReadSizes();
  std::fprintf(stderr,
               "engine_bench: %lld independent ops, %lld chained ops, %lld round trips; best of "
               "%d after a warm-up; %u hardware threads\n",
               static_cast<long long>(sz.independent), static_cast<long long>(sz.chain),
               static_cast<long long>(sz.round_trips), sz.reps,
               std::thread::hardware_concurrency());
  Report report;

  // The threaded engine and the TBB peer are measured side by side, round by
  // round; the naive engine, which has no threads to disturb or be
  // disturbed, on its own afterwards.
  Engine::SetType(EngineType::kThreaded);
  // The scheduler alone, as the TBB peer (which has no bound) is measured:
  // the run-ahead bound would pace the pusher of 500k independent ops.
  Engine::Get()->SetMaxInflight({0, 0, 0});
  EngineSide threaded_side(Engine::Get());
  auto threaded = MakeContender(&threaded_side, "threaded", sz.independent);
#if TESSERA_HAVE_TBB
  {
    TbbSide tbb_side;
    auto tbb = MakeContender(&tbb_side, "tbb", sz.independent);
    RunCommon(report, sz, threaded, tbb);
    DeleteVars(tbb);
  }
  RunTbbFunctionNode(report, sz);
#else
  RunCommon(report, sz, threaded);
#endif
  RunOperatorChain(report, sz, threaded);
  DeleteVars(threaded);

  Engine::SetType(EngineType::kNaive);
  Engine::Get()->SetMaxInflight({0, 0, 0});
  EngineSide naive_side(Engine::Get());
  auto naive = MakeContender(&naive_side, "naive", sz.independent);
  RunCommon(report, sz, naive);
  RunOperatorChain(report, sz, naive);
  DeleteVars(naive);

#if TESSERA_HAVE_TBB
  // Higher is better for rates and lower for latencies; each ratio is
  // oriented so that > 1 means the threaded engine is faster.
  auto rate_ratio = [&](const std::string& name, const std::string& workload,
                        const std::string& tbb_figure) {
    report.Print(name, report.Get("threaded." + workload) / report.Get(tbb_figure), "x");
  };
  auto latency_ratio = [&](const std::string& name, const std::string& workload,
                           const std::string& tbb_figure) {
    report.Print(name, report.Get(tbb_figure) / report.Get("threaded." + workload), "x");
  };
  for (const char* w : {"independent_ops", "independent_ops_novars", "independent_ops_2pushers"}) {
    rate_ratio("ratio." + std::string(w) + ".threaded_vs_tbb", w, "tbb." + std::string(w));
  }
  for (const char* w : {"chain_latency", "waitforvar_roundtrip"}) {
    latency_ratio("ratio." + std::string(w) + ".threaded_vs_tbb", w, "tbb." + std::string(w));
  }
  // A flow graph has no persistent operator; its peer is the plain chain.
  latency_ratio("ratio.operator_chain_latency.threaded_vs_tbb", "operator_chain_latency",
                "tbb.chain_latency");
  // The reference that keeps no dependency state at all, for the ops that
  // need none.
  rate_ratio("ratio.independent_ops_novars.threaded_vs_tbb_function_node", "independent_ops_novars",
             "tbb.function_node_ops");
#else
  std::fprintf(stderr, "engine_bench: built without oneTBB, no tbb.* figures or ratios\n");
#endif
  return 0;
}
