// When a CPU loop shares its work: below a floor never; without a measured
// cost by the old size rule; with one, only when its estimated time pays for
// the team's start (measured here, whatever this machine's figure is).
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "engine/op/kernel_launch.h"
#include "engine/op/launch_cost.h"

using namespace tessera;
using namespace tessera::op;

namespace {

RunContext TwoThreads() {
  RunContext r;
  r.ctx = Context::CPU();
  r.omp_threads = 2;
  return r;
}

}  // namespace

TEST_CASE("a loop without a cost shares from the old size; none below the floor") {
  LaunchCost cost;
  const RunContext ctx = TwoThreads();
  CHECK(cost.Threads(ctx, kOmpMeasuredMinElements - 1) == 1);
  CHECK(cost.Threads(ctx, kOmpMinElements - 1) == 1);
  CHECK(cost.Threads(ctx, kOmpMinElements) == 2);
  RunContext one = ctx;
  one.omp_threads = 1;
  CHECK(cost.Threads(one, int64_t{1} << 30) == 1);
}

TEST_CASE("a measured cost decides: costly loops share early, cheap ones stay on one thread") {
  const RunContext ctx = TwoThreads();
  CHECK(OmpForkJoinNs(2) >= 1.0);
  LaunchCost costly;
  costly.Record(kOmpMeasuredMinElements, 1, 1e3 * kOmpMeasuredMinElements);  // 1 us an element
  CHECK(costly.Threads(ctx, kOmpMeasuredMinElements) == 2);
#ifdef _OPENMP
  // A team costs at least tens of nanoseconds anywhere: 2^20 elements at a
  // thousandth of a nanosecond (1 us in all) never pay three of them...
  // unless the team is nearly free, when sharing is right too.
  LaunchCost cheap;
  cheap.Record(1 << 20, 1, 1e-3 * (1 << 20));
  const bool pays = (1 << 20) * 1e-3 > 3 * OmpForkJoinNs(2);
  CHECK(cheap.Threads(ctx, 1 << 20) == (pays ? 2 : 1));
  CHECK(cheap.Threads(ctx, kOmpMinElements) == 1);
#endif
  // A parallel run counts as its time less the team's start, times the threads.
  LaunchCost par;
  par.Record(1 << 16, 2, OmpForkJoinNs(2));  // all of it was the team
  CHECK(par.Threads(ctx, 1 << 16) == 1);
}

TEST_CASE("Kernel::Launch gives the same values on any thread count it picks") {
  struct twice {
    static void Map(int64_t i, float* out, const float* in) { out[i] = 2 * in[i]; }
  };
  std::vector<float> in(1 << 17), out(in.size());
  for (size_t i = 0; i < in.size(); ++i) in[i] = float(i);
  const RunContext ctx = TwoThreads();
  for (int round = 0; round < 4; ++round) {  // learns its cost meanwhile
    std::fill(out.begin(), out.end(), -1.f);
    Kernel<twice, cpu>::Launch(ctx, int64_t(in.size()), out.data(), in.data());
    for (size_t i = 0; i < in.size(); i += 997) REQUIRE(out[i] == 2 * float(i));
    CHECK(out.back() == 2 * in.back());
  }
}
