// Elementwise operator benchmarks. Prints `name: value unit` lines.
//
// (1) Bandwidth: elemwise_add of two 10M-element float32 arrays through
//     Invoke, into a preallocated out= array and into a fresh output, against
//     a plain OpenMP loop with non-temporal AVX stores in the same run, all on
//     2 threads. 12 bytes move per element (two reads, one write).
// (2) Invocation cost: a 1-element elemwise_add through Invoke, push and
//     completion included: N calls then one wait, a wait after every call,
//     and a new output array per call.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <vector>

#include "engine/ndarray/imperative.h"
#include "engine/ndarray/ndarray.h"

using namespace tessera;

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kThreads = 2;
constexpr int64_t kElements = 10'000'000;

double Seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The reference: out = a + b on kThreads threads, 8 floats per AVX store,
// non-temporal so the output bypasses the cache.
__attribute__((target("avx"))) void PlainAddStream(float* out, const float* a, const float* b,
                                                   int64_t n) {
#pragma omp parallel num_threads(kThreads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t chunk = ((n + nt - 1) / nt + 15) / 16 * 16;
    const int64_t begin = std::min(n, t * chunk), end = std::min(n, begin + chunk);
    int64_t i = begin;
    for (; i + 8 <= end; i += 8)
      _mm256_stream_ps(out + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    for (; i < end; ++i) out[i] = a[i] + b[i];
    _mm_sfence();
  }
}

double GBps(double seconds) {
  return 12.0 * kElements / seconds * 1e-9;
}

// Median of `samples` timings of `fn` (each run once); the runs of the
// variants are interleaved by the caller so drift on a shared machine hits
// them alike.
double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void Bandwidth() {
  const Context cpu = Context::CPU();
  std::vector<float> host_a(kElements), host_b(kElements);
  for (int64_t i = 0; i < kElements; ++i) {
    host_a[i] = float(i % 1000) * 0.5f;
    host_b[i] = float(i % 17);
  }
  NDArray a(Shape{kElements}, cpu), b(Shape{kElements}, cpu), out(Shape{kElements}, cpu);
  a.SyncCopyFromCPU(host_a.data(), kElements);
  b.SyncCopyFromCPU(host_b.data(), kElements);
  auto attrs = MakeAttrs("elemwise_add");

  auto* plain_out = static_cast<float*>(std::aligned_alloc(64, kElements * sizeof(float)));
  auto* pa = static_cast<float*>(std::aligned_alloc(64, kElements * sizeof(float)));
  auto* pb = static_cast<float*>(std::aligned_alloc(64, kElements * sizeof(float)));
  std::copy(host_a.begin(), host_a.end(), pa);
  std::copy(host_b.begin(), host_b.end(), pb);

  auto run_out = [&] {
    std::vector<NDArray> outs{out};
    auto t0 = Clock::now();
    Invoke(attrs, {a, b}, &outs);
    out.WaitToRead();
    return Seconds(t0);
  };
  auto run_fresh = [&] {
    auto t0 = Clock::now();
    std::vector<NDArray> outs;
    Invoke(attrs, {a, b}, &outs);
    outs[0].WaitToRead();
    return Seconds(t0);
  };
  auto run_plain = [&] {
    auto t0 = Clock::now();
    PlainAddStream(plain_out, pa, pb, kElements);
    return Seconds(t0);
  };
  for (int w = 0; w < 3; ++w) run_out(), run_fresh(), run_plain();  // page in, pool, threads
  std::vector<double> t_out, t_fresh, t_plain;
  for (int s = 0; s < 31; ++s) {
    t_out.push_back(run_out());
    t_fresh.push_back(run_fresh());
    t_plain.push_back(run_plain());
  }
  // The results agree (a spot check keeps the loops honest).
  std::vector<float> check(kElements);
  out.SyncCopyToCPU(check.data(), kElements);
  for (int64_t i = 0; i < kElements; i += 999'983)
    if (check[i] != plain_out[i]) std::printf("MISMATCH at %ld\n", static_cast<long>(i));

  const double out_gbps = GBps(Median(t_out)), fresh_gbps = GBps(Median(t_fresh)),
               plain_gbps = GBps(Median(t_plain));
  std::printf("elemwise_add_10M_out: %.2f GB/s\n", out_gbps);
  std::printf("elemwise_add_10M_fresh: %.2f GB/s\n", fresh_gbps);
  std::printf("plain_omp_nt_add_10M: %.2f GB/s\n", plain_gbps);
  std::printf("elemwise_add_out_vs_plain: %.3f ratio\n", out_gbps / plain_gbps);
  std::printf("elemwise_add_fresh_vs_plain: %.3f ratio\n", fresh_gbps / plain_gbps);
  std::free(plain_out);
  std::free(pa);
  std::free(pb);
}

void InvokeCost() {
  const Context cpu = Context::CPU();
  NDArray a(Shape{1}, cpu), b(Shape{1}, cpu), out(Shape{1}, cpu);
  const float one = 1.f;
  a.SyncCopyFromCPU(&one, 1);
  b.SyncCopyFromCPU(&one, 1);
  auto attrs = MakeAttrs("elemwise_add");
  std::vector<NDArray> outs{out};
  constexpr int kCalls = 100'000;
  for (int i = 0; i < 1000; ++i) Invoke(attrs, {a, b}, &outs);
  out.WaitToRead();

  auto t0 = Clock::now();
  for (int i = 0; i < kCalls; ++i) Invoke(attrs, {a, b}, &outs);
  out.WaitToRead();
  std::printf("invoke_tiny_add_pipelined: %.3f us/op\n", Seconds(t0) / kCalls * 1e6);

  t0 = Clock::now();
  for (int i = 0; i < kCalls; ++i) {
    Invoke(attrs, {a, b}, &outs);
    out.WaitToRead();
  }
  std::printf("invoke_tiny_add_wait_each: %.3f us/op\n", Seconds(t0) / kCalls * 1e6);

  // A new output array per call, as `c = a + b` makes from Lua: allocation,
  // inference and freeing included.
  t0 = Clock::now();
  std::vector<NDArray> fresh;
  for (int i = 0; i < kCalls; ++i) {
    fresh.clear();
    Invoke(attrs, {a, b}, &fresh);
  }
  fresh[0].WaitToRead();
  std::printf("invoke_tiny_add_fresh_out: %.3f us/op\n", Seconds(t0) / kCalls * 1e6);

  // The by-name shorthand: parses the op name and allocates the output too.
  t0 = Clock::now();
  NDArray last;
  for (int i = 0; i < kCalls; ++i) last = Invoke("elemwise_add", {a, b})[0];
  last.WaitToRead();
  std::printf("invoke_tiny_add_by_name_fresh_out: %.3f us/op\n", Seconds(t0) / kCalls * 1e6);
}

}  // namespace

int main() {
  // Both sides of the bandwidth comparison on the same thread count (an
  // explicit TESSERA_OMP_THREADS wins).
  setenv("TESSERA_OMP_THREADS", "2", 0);
  Bandwidth();
  InvokeCost();
  return 0;
}
