// The memory planner on made-up graphs: in place, liveness sharing, external
// entries, several outputs per step, and the unshared baseline.
#include <doctest/doctest.h>

#include <set>

#include "engine/graph/plan_memory.h"
#include "tests/cpp/test_util.h"

using namespace tessera::graph;

namespace {

// Entries 0..n-1, all `bytes` big; entry 0 external (an argument).
PlanRequest Chain(size_t n, size_t bytes, bool inplace_pairs) {
  PlanRequest r;
  r.entry_bytes.assign(n, bytes);
  r.external.assign(n, false);
  r.external[0] = true;
  for (uint32_t e = 1; e < n; ++e) {
    PlanStep s{{e - 1}, {e}, {}};
    if (inplace_pairs) s.inplace = {{0, 0}};
    r.steps.push_back(s);
  }
  return r;
}

size_t Distinct(const MemoryPlan& p, const std::vector<uint32_t>& entries) {
  std::set<int> ids;
  for (uint32_t e : entries) ids.insert(p.storage_id[e]);
  return ids.size();
}

}  // namespace

TEST_CASE("a chain of in-place ops runs in one block; the argument is never taken") {
  const MemoryPlan p = PlanMemory(Chain(6, 400, true));
  CHECK(p.storage_id[0] == MemoryPlan::kExternal);
  CHECK(p.num_storage() == 1);
  CHECK(!p.inplace[1]);  // its input is external
  for (uint32_t e = 2; e < 6; ++e) CHECK(p.inplace[e]);
  CHECK(p.planned_bytes == 400);
  CHECK(p.unshared_bytes == 5 * 400);
}

TEST_CASE("without in-place options a chain alternates between two blocks") {
  const MemoryPlan p = PlanMemory(Chain(6, 400, false));
  CHECK(p.num_storage() == 2);
  for (uint32_t e = 2; e < 6; ++e) {
    CHECK(!p.inplace[e]);
    CHECK(p.storage_id[e] != p.storage_id[e - 1]);  // an output never lands on its input
    if (e >= 3) CHECK(p.storage_id[e] == p.storage_id[e - 2]);  // ... but reuses the one before
  }
  CHECK(p.planned_bytes == 800);
}

TEST_CASE("no sharing, no in-place: the plan is the unshared baseline") {
  PlanRequest r = Chain(6, 400, true);
  r.allow_inplace = false;
  r.allow_sharing = false;
  const MemoryPlan p = PlanMemory(r);
  CHECK(p.num_storage() == 5);
  CHECK(p.planned_bytes == p.unshared_bytes);
}

TEST_CASE("in place only when this step is the input's last reader") {
  // 1 = f(0); 2 = g(1) (in place allowed); 3 = h(1, 2): 1 is still read after g.
  PlanRequest r;
  r.entry_bytes = {8, 8, 8, 8};
  r.external = {true, false, false, false};
  r.steps = {{{0}, {1}, {}}, {{1}, {2}, {{0, 0}}}, {{1, 2}, {3}, {{0, 0}, {1, 0}}}};
  const MemoryPlan p = PlanMemory(r);
  CHECK(!p.inplace[2]);
  CHECK(p.storage_id[2] != p.storage_id[1]);
  CHECK(p.inplace[3]);  // h is the last reader of both; it takes the first listed
  CHECK(p.storage_id[3] == p.storage_id[1]);
}

TEST_CASE("in place needs equal sizes, and an input reads twice in its own step is fine") {
  PlanRequest r;
  r.entry_bytes = {8, 8, 16, 8};
  r.external = {true, false, false, false};
  // 2 = bigger(1) with an in-place pair (sizes differ: refused); 3 = 1 * 1.
  r.steps = {{{0}, {1}, {}}, {{1}, {2}, {{0, 0}}}, {{1, 1}, {3}, {{0, 0}, {1, 0}}}};
  const MemoryPlan p = PlanMemory(r);
  CHECK(!p.inplace[2]);
  CHECK(p.inplace[3]);
  CHECK(p.storage_id[3] == p.storage_id[1]);
}

TEST_CASE("the outputs of one step get distinct blocks; unread outputs are freed at once") {
  // 1, 2 = split(0); 3 = f(1): 2 is never read, its block is free for 4 = g(3).
  PlanRequest r;
  r.entry_bytes = {8, 8, 8, 8, 8};
  r.external = {true, false, false, false, false};
  r.steps = {{{0}, {1, 2}, {{0, 0}, {0, 1}}}, {{1}, {3}, {}}, {{3}, {4}, {}}};
  const MemoryPlan p = PlanMemory(r);
  CHECK(p.storage_id[1] != p.storage_id[2]);
  CHECK(!p.inplace[1]);  // input 0 is external
  CHECK(p.storage_id[3] == p.storage_id[2]);
  CHECK(p.storage_id[4] == p.storage_id[1]);
  CHECK(p.num_storage() == 2);
}

TEST_CASE("pooled blocks: best fit, growth of a smaller block, the match range") {
  PlanRequest r;
  // 1 (100) and 2 (1000) live together, then die; 3 (900) fits the 1000 block;
  // 4 (150), alive with 3, grows the 100 block; 5 (1e6) is too big for both.
  r.entry_bytes = {8, 100, 1000, 900, 150, 1000000, 8};
  r.external = {true, false, false, false, false, false, true};
  r.steps = {{{0}, {1}, {}}, {{0}, {2}, {}}, {{1, 2}, {6}, {}},
             {{0}, {3}, {}}, {{0}, {4}, {}}, {{3, 4}, {5}, {}}};
  const MemoryPlan p = PlanMemory(r);
  CHECK(p.storage_id[3] == p.storage_id[2]);
  CHECK(p.storage_id[4] == p.storage_id[1]);
  CHECK(p.storage_bytes[p.storage_id[4]] == 150);
  CHECK(p.storage_id[5] != p.storage_id[1]);
  CHECK(p.storage_id[5] != p.storage_id[2]);
  CHECK(Distinct(p, {1, 2, 5}) == 3);
  CHECK(p.planned_bytes == 150 + 1000 + 1000000);
  CHECK(p.unshared_bytes == 100 + 1000 + 900 + 150 + 1000000);
}

TEST_CASE("errors: an entry out of range") {
  PlanRequest r;
  r.entry_bytes = {8};
  r.external = {false};
  r.steps = {{{3}, {0}, {}}};
  CHECK(tessera::test::Contains(tessera::test::ErrorOf([&] { PlanMemory(r); }),
                                "entry 3 out of range"));
}

TEST_CASE("FormatBytes") {
  CHECK(FormatBytes(12) == "12 B");
  CHECK(FormatBytes(2048) == "2.0 KB");
  CHECK(FormatBytes(3 * 1024 * 1024 + 512 * 1024) == "3.5 MB");
}
