// BatchPrefetcher: batches made on its thread hold the planned rows of every
// source (any dtype, any depth), a new epoch drops the old one's batches,
// bad plans are refused without changing anything, a failed source poisons
// its batches, and destruction with batches in flight is clean.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "engine/io/batch_prefetcher.h"
#include "engine/scheduler/engine.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using tessera::io::BatchPrefetcher;
using tessera::test::Contains;
using tessera::test::ErrorOf;

namespace {

// An (n, 3) float array whose row r holds r, r + 0.25, r + 0.5, and an (n)
// int32 array holding 10 r.
std::vector<NDArray> Sources(int64_t n) {
  NDArray x(Shape{n, 3}, Context::CPU(), DType::kFloat32);
  NDArray y(Shape{n}, Context::CPU(), DType::kInt32);
  std::vector<float> xs;
  std::vector<int32_t> ys;
  for (int64_t r = 0; r < n; ++r) {
    for (float f : {0.f, 0.25f, 0.5f}) xs.push_back(static_cast<float>(r) + f);
    ys.push_back(static_cast<int32_t>(10 * r));
  }
  x.SyncCopyFromCPU(xs.data(), xs.size());
  y.SyncCopyFromCPU(ys.data(), ys.size());
  return {x, y};
}

void CheckBatch(const io::Batch& b, const std::vector<int64_t>& rows) {
  REQUIRE(b.arrays.size() == 2);
  CHECK(b.arrays[0].shape() == Shape{static_cast<int64_t>(rows.size()), 3});
  CHECK(b.arrays[1].dtype() == DType::kInt32);
  std::vector<double> x = b.arrays[0].ToVector(), y = b.arrays[1].ToVector();
  for (size_t i = 0; i < rows.size(); ++i) {
    CHECK(x[3 * i] == static_cast<double>(rows[i]));
    CHECK(x[3 * i + 2] == static_cast<double>(rows[i]) + 0.5);
    CHECK(y[i] == 10.0 * static_cast<double>(rows[i]));
  }
}

}  // namespace

TEST_CASE("prefetched batches hold the planned rows, at every depth") {
  std::mt19937 rng(11);
  for (int depth : {1, 2, 4}) {
    BatchPrefetcher p(Sources(37), depth);
    for (int epoch = 0; epoch < 3; ++epoch) {
      const int64_t b = 1 + static_cast<int64_t>(rng() % 6), batches = 1 + rng() % 9;
      std::vector<int64_t> rows(static_cast<size_t>(b * batches));
      for (auto& r : rows) r = rng() % 37;
      p.Start(rows, b, b - 1);
      CHECK(p.num_batches() == static_cast<size_t>(batches));
      for (int64_t k = 0; k < batches; ++k) {
        auto batch = p.Take();
        REQUIRE(batch.has_value());
        CHECK(batch->pad == (k + 1 == batches ? b - 1 : 0));
        CheckBatch(*batch, std::vector<int64_t>(rows.begin() + k * b, rows.begin() + (k + 1) * b));
      }
      CHECK(p.Ready());
      CHECK_FALSE(p.Take().has_value());
    }
  }
}

TEST_CASE("a new epoch drops what is left of the last one") {
  BatchPrefetcher p(Sources(8), 3);
  p.Start({0, 1, 2, 3, 4, 5}, 2, 0);
  CheckBatch(*p.Take(), {0, 1});
  p.Start({7, 6, 5, 4}, 2, 1);
  auto first = p.Take();
  CheckBatch(*first, {7, 6});
  CHECK(first->pad == 0);
  auto second = p.Take();
  CheckBatch(*second, {5, 4});
  CHECK(second->pad == 1);
  CHECK_FALSE(p.Take().has_value());
}

TEST_CASE("bad plans and sources are refused with clear errors") {
  CHECK(Contains(ErrorOf([] { BatchPrefetcher p({}, 2); }), "no arrays"));
  CHECK(Contains(ErrorOf([] { BatchPrefetcher p(Sources(4), 0); }), "depth"));
  auto s = Sources(4);
  s[1] = NDArray(Shape{5}, Context::CPU());
  CHECK(Contains(ErrorOf([&] { BatchPrefetcher p(s, 1); }), "differ in rows"));
  BatchPrefetcher p(Sources(4), 2);
  p.Start({0, 1}, 2, 0);
  CHECK(Contains(ErrorOf([&] { p.Start({0, 4}, 2, 0); }), "row 4 is out of range for 4"));
  CHECK(Contains(ErrorOf([&] { p.Start({0, 1, 2}, 2, 0); }), "whole batches"));
  CHECK(Contains(ErrorOf([&] { p.Start({0, 1}, 2, 2); }), "last_pad"));
  CheckBatch(*p.Take(), {0, 1});  // the epoch before the refused plans carries on
}

TEST_CASE("a failed source poisons its batches; destruction with batches in flight") {
  auto s = Sources(6);
  engine::Engine::Get()->PushSync([](RunContext) { throw Error("fill failed"); }, Context::CPU(),
                                  {}, {s[0].var()}, engine::FnProperty::kNormal, 0, "fill");
  {
    BatchPrefetcher p(s, 2);
    p.Start({0, 1, 2, 3, 4, 5}, 3, 0);
    auto batch = p.Take();
    CHECK(Contains(ErrorOf([&] { batch->arrays[0].WaitToRead(); }), "fill failed"));
    batch->arrays[1].WaitToRead();  // the other source was fine
  }                                 // the second batch may still be in flight
  // The error was reported once, by the wait above.
  CHECK(ErrorOf([] { engine::Engine::Get()->WaitForAll(); }).empty());
}
