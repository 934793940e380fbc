// The communication lane (engine/kvstore/collectives.h). Under CTest it runs
// as a job of one process; tests/dist/run_dist_tests.py also runs it under
// mpirun with 2 and 3 processes. Every case makes the same collectives in
// the same order on every process, and checks against a sequential model of
// all the processes.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include "engine/kvstore/collectives.h"
#include "engine/ndarray/ndarray.h"
#include "engine/scheduler/engine.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using tessera::kvstore::Collectives;
using tessera::test::Contains;
using tessera::test::ErrorOf;

namespace {

// MPI ends when the process does (after the last case).
struct EndMpiAtExit {
  ~EndMpiAtExit() { Collectives::Finalize(); }
} end_mpi_at_exit;

NDArray Filled(int64_t n, float v) {
  NDArray a(Shape({n}), Context::CPU());
  std::vector<float> host(static_cast<size_t>(n), v);
  a.SyncCopyFromCPU(host.data(), host.size());
  return a;
}

// An engine op that sleeps a little, then a = a * c + (rank + 1) * d: work
// that finishes in an order of its own, different on every process.
void PushScale(NDArray a, float c, float d, int rank, int sleep_us) {
  engine::Engine::Get()->PushSync(
      [a, c, d, rank, sleep_us](RunContext) {
        std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
        float* p = a.data().dptr<float>();
        for (int64_t i = 0; i < a.Size(); ++i) p[i] = p[i] * c + static_cast<float>(rank + 1) * d;
      },
      Context::CPU(), {}, {a.var()}, engine::FnProperty::kNormal, 0, "test.scale");
}

}  // namespace

TEST_CASE("sums, minimums and broadcasts over the processes, fused or not") {
  Collectives& c = Collectives::Get();
  const int n = c.size(), r = c.rank();
  REQUIRE(r >= 0);
  REQUIRE(r < n);
  NDArray a = Filled(5, static_cast<float>(r + 1)), b = Filled(3, 10.0f);
  c.PushAllreduce({a, b}, Collectives::Reduce::kSum, 0, "a and b");
  CHECK(a.ToVector() == std::vector<double>(5, n * (n + 1) / 2.0));
  CHECK(b.ToVector() == std::vector<double>(3, 10.0 * n));
  NDArray m = Filled(2, static_cast<float>(r + 3));
  c.PushAllreduce({m}, Collectives::Reduce::kMin, 0, "min");
  CHECK(m.ToVector() == std::vector<double>(2, 3.0));
  NDArray x = Filled(4, static_cast<float>(r * 7));
  c.PushBroadcast({x}, n - 1, 0, "from the last");
  CHECK(x.ToVector() == std::vector<double>(4, 7.0 * (n - 1)));
}

TEST_CASE("randomized: engine work in any order, collectives in push order, as a model") {
  Collectives& c = Collectives::Get();
  const int n = c.size(), r = c.rank();
  constexpr int kArrays = 6, kSteps = 200;
  std::vector<NDArray> arrays;
  // model[p][i]: array i's value on process p (every element equal).
  std::vector<std::vector<double>> model(static_cast<size_t>(n), std::vector<double>(kArrays, 1));
  for (int i = 0; i < kArrays; ++i) arrays.push_back(Filled(4 + i, 1.0f));
  std::mt19937 same(7);       // the same choices on every process
  std::mt19937 own(100 + r);  // timing of this process's own
  for (int step = 0; step < kSteps; ++step) {
    const int kind = static_cast<int>(same() % 3);
    if (kind == 0) {
      const int i = static_cast<int>(same() % kArrays);
      const float k = static_cast<float>(same() % 3) * 0.5f, d = static_cast<float>(same() % 4);
      PushScale(arrays[static_cast<size_t>(i)], k, d, r, static_cast<int>(own() % 300));
      for (int p = 0; p < n; ++p) model[p][i] = model[p][i] * k + (p + 1) * d;
    } else {
      std::vector<NDArray> pick;
      std::vector<int> which;
      for (int i = 0; i < kArrays; ++i)
        if (same() % 2) {
          pick.push_back(arrays[static_cast<size_t>(i)]);
          which.push_back(i);
        }
      if (pick.empty()) continue;
      if (kind == 1) {
        c.PushAllreduce(pick, Collectives::Reduce::kSum, static_cast<int>(own() % 5), "sum");
        for (int i : which) {
          double sum = 0;
          for (int p = 0; p < n; ++p) sum += model[p][i];
          for (int p = 0; p < n; ++p) model[p][i] = sum;
        }
      } else {
        const int root = static_cast<int>(same() % n);
        c.PushBroadcast(pick, root, 0, "broadcast");
        for (int i : which)
          for (int p = 0; p < n; ++p) model[p][i] = model[root][i];
      }
    }
  }
  for (int i = 0; i < kArrays; ++i) {
    const std::vector<double> got = arrays[static_cast<size_t>(i)].ToVector();
    for (double v : got) CHECK(v == doctest::Approx(model[r][i]).epsilon(1e-5));
  }
}

TEST_CASE("a collective whose input failed still runs, contributing NaN; the lane goes on") {
  Collectives& c = Collectives::Get();
  const int n = c.size(), r = c.rank();
  NDArray a = Filled(3, 1.0f);
  if (r == 0) {
    engine::Engine::Get()->PushSync([](RunContext) { TS_THROW << "the input failed"; },
                                    Context::CPU(), {}, {a.var()}, engine::FnProperty::kNormal, 0,
                                    "test.fail");
  }
  c.PushAllreduce({a}, Collectives::Reduce::kSum, 0, "poisoned");
  if (r == 0) {
    CHECK(Contains(ErrorOf([&] { a.WaitToRead(); }), "the input failed"));
  } else {
    for (double v : a.ToVector()) CHECK(std::isnan(v));
  }
  NDArray b = Filled(2, 2.0f);
  c.PushAllreduce({b}, Collectives::Reduce::kSum, 0, "after");
  CHECK(b.ToVector() == std::vector<double>(2, 2.0 * n));
}

TEST_CASE("bad calls are errors that name the call") {
  Collectives& c = Collectives::Get();
  NDArray f = Filled(2, 1.0f);
  NDArray h(Shape({2}), Context::CPU(), DType::kFloat16);
  NDArray d(Shape({2}), Context::CPU(), DType::kFloat64);
  CHECK(Contains(ErrorOf([&] { c.PushAllreduce({h}, Collectives::Reduce::kSum, 0, "k"); }),
                 "kvstore allreduce (k): dtype float16 is not carried"));
  CHECK(Contains(ErrorOf([&] {
                   c.PushAllreduce({f, d}, Collectives::Reduce::kSum, 0, "k");
                 }),
                 "share a dtype"));
  CHECK(Contains(ErrorOf([&] { c.PushAllreduce({}, Collectives::Reduce::kSum, 0, "k"); }),
                 "no arrays"));
  CHECK(Contains(ErrorOf([&] { c.PushBroadcast({f}, c.size(), 0, "k"); }),
                 "is not a rank of this job"));
  c.PushAllreduce({f}, Collectives::Reduce::kMax, 0, "still fine");
  CHECK(f.ToVector() == std::vector<double>(2, 1.0));
}
