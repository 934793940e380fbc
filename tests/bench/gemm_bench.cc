// CPU GEMM: tessera's Gemm against dnnl_sgemm and cblas_sgemm called
// directly, and each backend per shape (the measurement behind the rule in
// ops/tensor/gemm_dispatch.cc). Prints `name: value unit` lines; `--all` adds
// the per-shape sweep, the batched modes and double (`--sweep`: only those),
// `--threads N` runs the sweep on N threads.
#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "engine/ndarray/imperative.h"
#include "ops/tensor/gemm.h"

using namespace tessera::op;

namespace {

using tessera::Context;
using tessera::Invoke;
using tessera::MakeAttrs;
using tessera::NDArray;

// Threads for the sweep's calls (--threads N; 0: all cores).
int g_threads = 0;

// Best of several samples after a warm-up; each sample repeats the call
// enough times to last ~30 ms so timer resolution and one-off stalls (the
// machine is shared) do not decide the figure.
double BestSeconds(const std::function<void()>& fn, int samples = 5) {
  using Clock = std::chrono::steady_clock;
  fn();
  auto t0 = Clock::now();
  fn();
  double once = std::chrono::duration<double>(Clock::now() - t0).count();
  int reps = std::max(1, static_cast<int>(0.03 / std::max(once, 1e-9)));
  double best = 1e30;
  for (int s = 0; s < samples; ++s) {
    t0 = Clock::now();
    for (int r = 0; r < reps; ++r) fn();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count() / reps);
  }
  return best;
}

template <typename T>
std::vector<T> Random(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<T> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

double Gflops(double m, double n, double k, double batch, double secs) {
  return 2.0 * m * n * k * batch / secs * 1e-9;
}

void Print(const std::string& name, double value, const char* unit) {
  std::printf("%s: %.2f %s\n", name.c_str(), value, unit);
  std::fflush(stdout);
}

// tessera vs the two libraries called directly, on square float32.
void Headline(int64_t s) {
  auto a = Random<float>(s * s, 1), b = Random<float>(s * s, 2);
  std::vector<float> c(s * s);
  const std::string p = "sgemm" + std::to_string(s) + ".";
  double t_ts = BestSeconds(
      [&] { Gemm(false, false, s, s, s, 1.f, a.data(), s, b.data(), s, 0.f, c.data(), s); });
  double t_dnnl = BestSeconds(
      [&] { dnnl_sgemm('N', 'N', s, s, s, 1.f, a.data(), s, b.data(), s, 0.f, c.data(), s); });
  // Direct OpenBLAS with its own thread pool, as a program using it alone
  // would; tessera keeps OpenBLAS single-threaded, so restore that after.
  openblas_set_num_threads(omp_get_max_threads());
  double t_blas = BestSeconds([&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(s), int(s), int(s), 1.f, a.data(),
                int(s), b.data(), int(s), 0.f, c.data(), int(s));
  });
  openblas_set_num_threads(1);
  // The dot operator as a user calls it: push through the engine, wait.
  NDArray na({s, s}, Context::CPU()), nb({s, s}, Context::CPU()), nc({s, s}, Context::CPU());
  na.SyncCopyFromCPU(a.data(), a.size());
  nb.SyncCopyFromCPU(b.data(), b.size());
  auto dot_attrs = MakeAttrs("dot");
  double t_op = BestSeconds([&] {
    std::vector<NDArray> out{nc};
    Invoke(dot_attrs, {na, nb}, &out);
    nc.WaitToRead();
  });
  Print(p + "tessera", Gflops(s, s, s, 1, t_ts), "GFLOP/s");
  Print(p + "dot_op", Gflops(s, s, s, 1, t_op), "GFLOP/s");
  Print(p + "dot_op_vs_best_direct", std::min(t_dnnl, t_blas) / t_op, "ratio");
  Print(p + "dnnl_direct", Gflops(s, s, s, 1, t_dnnl), "GFLOP/s");
  Print(p + "openblas_direct", Gflops(s, s, s, 1, t_blas), "GFLOP/s");
  Print(p + "tessera_vs_best_direct", std::min(t_dnnl, t_blas) / t_ts, "ratio");
}

// One shape on each backend, forced.
template <typename T>
void Shape(const std::string& name, bool ta, bool tb, int64_t m, int64_t n, int64_t k) {
  auto a = Random<T>(m * k, 1), b = Random<T>(k * n, 2);
  std::vector<T> c(m * n);
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  std::vector<gemm::Backend> backends = {gemm::Backend::kOpenBlas};
  if constexpr (std::is_same_v<T, float>) backends.push_back(gemm::Backend::kDnnl);
  if (m * n * k <= (int64_t{1} << 24)) backends.push_back(gemm::Backend::kFallback);
  for (auto be : backends) {
    double t = BestSeconds([&] {
      gemm::GemmWith<T>(be, ta, tb, m, n, k, T(1), a.data(), lda, b.data(), ldb, T(0), c.data(), n,
                        g_threads);
    });
    Print(name + "." + gemm::BackendName(be), Gflops(m, n, k, 1, t), "GFLOP/s");
  }
  auto chosen = gemm::Choose(std::is_same_v<T, double>, ta, tb, m, n, k);
  std::printf("%s.rule: %s\n", name.c_str(), gemm::BackendName(chosen));
}

// `batch` small products on each backend, serial and parallel over the batch.
template <typename T>
void Batched(const std::string& name, int64_t batch, int64_t m, int64_t n, int64_t k) {
  auto a = Random<T>(batch * m * k, 1), b = Random<T>(batch * k * n, 2);
  std::vector<T> c(batch * m * n);
  std::vector<gemm::Backend> backends = {gemm::Backend::kOpenBlas, gemm::Backend::kFallback};
  if constexpr (std::is_same_v<T, float>) backends.push_back(gemm::Backend::kDnnl);
  for (auto be : backends) {
    for (auto mode : {gemm::BatchMode::kSerial, gemm::BatchMode::kParallel}) {
      double t = BestSeconds([&] {
        gemm::GemmBatchedWith<T>(be, mode, false, false, m, n, k, T(1), a.data(), k, b.data(), n,
                                 T(0), c.data(), n, batch, m * k, k * n, m * n, g_threads);
      });
      Print(name + "." + gemm::BackendName(be) +
                (mode == gemm::BatchMode::kSerial ? ".serial" : ".parallel"),
            Gflops(m, n, k, batch, t), "GFLOP/s");
    }
  }
}

void Sweep() {
  for (int64_t s = 16; s <= 2048; s *= 2) {
    Shape<float>("sgemm.square" + std::to_string(s), false, false, s, s, s);
  }
  for (int64_t s : {64, 256, 1024}) {
    Shape<float>("sgemm.square" + std::to_string(s) + ".nt", false, true, s, s, s);
    Shape<float>("sgemm.square" + std::to_string(s) + ".tn", true, false, s, s, s);
    Shape<float>("sgemm.square" + std::to_string(s) + ".tt", true, true, s, s, s);
  }
  // Skinny: a vector times a matrix (m = 1), a matrix times a vector (n = 1),
  // an outer-product-like update (small k), and FullyConnected-like shapes.
  for (int64_t s : {256, 1024, 4096}) {
    Shape<float>("sgemm.m1_n" + std::to_string(s) + "_k" + std::to_string(s), false, false, 1, s,
                 s);
    Shape<float>("sgemm.m1_n" + std::to_string(s) + "_k" + std::to_string(s) + ".nt", false, true,
                 1, s, s);
    Shape<float>("sgemm.n1_m" + std::to_string(s) + "_k" + std::to_string(s), false, false, s, 1,
                 s);
  }
  for (int64_t k : {1, 4, 16, 64}) {
    Shape<float>("sgemm.m1024_n1024_k" + std::to_string(k), false, false, 1024, 1024, k);
  }
  Shape<float>("sgemm.fc_m32_n1024_k1024.nt", false, true, 32, 1024, 1024);
  Shape<float>("sgemm.fc_m256_n4096_k1024.nt", false, true, 256, 4096, 1024);
  Shape<float>("sgemm.fc_m64_n10_k512.nt", false, true, 64, 10, 512);
  for (int64_t s = 16; s <= 1024; s *= 4) {
    Shape<double>("dgemm.square" + std::to_string(s), false, false, s, s, s);
  }
  Shape<double>("dgemm.m1_n1024_k1024", false, false, 1, 1024, 1024);
  for (int64_t s : {4, 8, 16, 32, 64, 128}) {
    int64_t batch = std::max<int64_t>(4, (int64_t{1} << 24) / (s * s * s));
    Batched<float>("sgemm.batch" + std::to_string(batch) + "_" + std::to_string(s), batch, s, s, s);
  }
  Batched<double>("dgemm.batch4096_16", 4096, 16, 16, 16);
  Batched<double>("dgemm.batch64_64", 64, 64, 64, 64);
}

}  // namespace

int main(int argc, char** argv) {
  bool all = false, headline = true;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--all")) all = true;
    if (!std::strcmp(argv[i], "--sweep")) all = true, headline = false;
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) g_threads = std::atoi(argv[++i]);
  }
  if (headline) {
    Headline(1024);
    Headline(2048);
  }
  if (all) Sweep();
  return 0;
}
