// Measures CPU worker counts on the workloads that decide the default
// (TESSERA_CPU_WORKER_NTHREADS): streams of no-op ops, of small serial ops,
// and of large ops that parallelise inside with OpenMP over OpThreads()
// threads. Prints `workers<N>.<workload>: value unit` lines.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <vector>

#include "engine/scheduler/engine.h"

using namespace tessera;
using namespace tessera::engine;

namespace {

double TimeBest(int reps, const std::function<void()>& fn) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// Ops over `n` floats each: y = a*x + y (memory-bound) or, when `heavy`, a
// compute-bound polynomial as GEMM-like ops are. Independent ops each write
// their own variable; a chain writes one variable, as consecutive layers do.
double OpsPerSecond(Engine* eng, int num_ops, size_t n, bool use_omp, bool heavy = false,
                    bool chain = false) {
  std::vector<std::vector<float>> xs(num_ops, std::vector<float>(n, 1.f)),
      ys(num_ops, std::vector<float>(n, 2.f));
  std::vector<VarHandle> vars(num_ops);
  for (auto& v : vars) v = eng->NewVariable();
  int threads = use_omp ? eng->OpThreads() : 1;
  double t = TimeBest(3, [&] {
    for (int i = 0; i < num_ops; ++i) {
      float* x = xs[i].data();
      float* y = ys[i].data();
      eng->PushSync(
          [x, y, n, threads, heavy](RunContext) {
            if (heavy) {
#pragma omp parallel for num_threads(threads) if (threads > 1)
              for (long j = 0; j < long(n); ++j) {
                float v = x[j] + j * 1e-7f, acc = y[j];
                for (int k = 0; k < 32; ++k) acc = acc * 0.999f + v * (1.f - v * acc);
                y[j] = acc;
              }
            } else {
#pragma omp parallel for num_threads(threads) if (threads > 1)
              for (long j = 0; j < long(n); ++j) y[j] = 0.5f * x[j] + y[j];
            }
          },
          Context::CPU(), {}, {vars[chain ? 0 : i]});
    }
    eng->WaitForAll();
  });
  for (auto v : vars) eng->DeleteVariable(nullptr, Context::CPU(), v);
  eng->WaitForAll();
  return num_ops / t;
}

}  // namespace

int main() {
  for (int workers : {1, 2}) {
    EngineOptions opts;
    opts.cpu_workers = workers;
    auto eng = CreateEngine(EngineType::kThreaded, opts);
    std::printf("workers%d.noop_ops: %.3g ops/s\n", workers,
                OpsPerSecond(eng.get(), 200000, 0, false));
    std::printf("workers%d.small_serial_ops_4k: %.3g ops/s\n", workers,
                OpsPerSecond(eng.get(), 20000, 4096, false));
    std::printf("workers%d.large_omp_ops_4m: %.3g ops/s\n", workers,
                OpsPerSecond(eng.get(), 40, 4 << 20, true));
    std::printf("workers%d.compute_omp_ops_1m: %.3g ops/s\n", workers,
                OpsPerSecond(eng.get(), 40, 1 << 20, true, true));
    std::printf("workers%d.compute_omp_chain_1m: %.3g ops/s\n", workers,
                OpsPerSecond(eng.get(), 40, 1 << 20, true, true, true));
    std::fflush(stdout);
  }
  return 0;
}
