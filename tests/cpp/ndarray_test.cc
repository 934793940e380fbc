// NDArray: construction, dtypes, delayed allocation, reshape codes, views that
// share memory (through host copies and through pushed ops), copies, dtype
// conversion, wait ordering under a randomized workload, error poisoning, the
// return of freed memory to the pool, and GPU contexts.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/ndarray/imperative.h"
#include "engine/ndarray/ndarray.h"
#include "engine/op/infer_utils.h"
#include "engine/op/op.h"
#include "engine/op/op_attr_types.h"
#include "engine/op/reshape_spec.h"
#include "engine/storage/storage.h"
#include "tests/cpp/op_test_util.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using tessera::test::Array;
using tessera::test::CheckClose;
using tessera::test::Contains;
using tessera::test::ErrorOf;
using tessera::test::Iota;

// Test-only operators.
namespace tessera::op {
namespace {

// Copies its input, but fails inside the kernel when an element is negative:
// an error found in the data, so it surfaces at the next wait.
void CheckedCopy(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>&, const std::vector<TBlob>& out) {
  const double* x = in[0].dptr<double>();
  double* y = out[0].dptr<double>();
  for (int64_t i = 0; i < in[0].Size(); ++i) {
    TS_CHECK(x[i] >= 0) << "_test_checked_copy: element " << i << " is negative (" << x[i] << ")";
    y[i] = x[i];
  }
}

// Sleeps, copies its input, then raises the flag: a slow reader to observe
// what WaitToWrite waits for.
std::atomic<int> slow_copies_done{0};
void SlowCopy(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in,
              const std::vector<OpReqType>&, const std::vector<TBlob>& out) {
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  std::copy_n(in[0].dptr<double>(), in[0].Size(), out[0].dptr<double>());
  slow_copies_done.fetch_add(1);
}

TS_REGISTER_OP(_test_checked_copy)
    .describe("Test op: copies float64 data, failing in the kernel on a negative element.")
    .set_num_inputs(1)
    .set_num_outputs(1)
    .set_attr<FInferShape>("FInferShape", ElemwiseShape<1, 1>)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
    .set_attr<FCompute>(kFComputeCPU, CheckedCopy);

TS_REGISTER_OP(_test_slow_copy)
    .describe("Test op: copies float64 data after sleeping 30 ms.")
    .set_num_inputs(1)
    .set_num_outputs(1)
    .set_attr<FInferShape>("FInferShape", ElemwiseShape<1, 1>)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
    .set_attr<FCompute>(kFComputeCPU, SlowCopy);

}  // namespace
}  // namespace tessera::op

namespace {

// y = a x^2 + b x + c into `out` (a view or an array), pushed.
void QuadraticInto(const NDArray& x, const NDArray& out, double a, double b, double c,
                   OpReqType req = kWriteTo) {
  std::vector<NDArray> outs{out};
  InvokeOptions opt;
  opt.req = {req};
  Invoke(MakeAttrs("quadratic",
                   {{"a", std::to_string(a)}, {"b", std::to_string(b)}, {"c", std::to_string(c)}}),
         {x}, &outs, opt);
}

storage::StorageStats CpuStats() {
  engine::Engine::Get()->WaitForAll();
  return storage::Storage::Get()->Stats(Context::CPU());
}

}  // namespace

TEST_CASE("construction: shape, dtype, context, sizes, footer") {
  NDArray none;
  CHECK(none.is_none());
  CHECK(none.Footer() == "[NDArray none]");
  CHECK(none.var() == nullptr);
  none.WaitToRead();  // a no-op on a none array
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                  DType::kUint8, DType::kInt8, DType::kInt32, DType::kInt64, DType::kBool}) {
    NDArray a(Shape{2, 3, 4}, Context::CPU(), t);
    CHECK(!a.is_none());
    CHECK(a.dtype() == t);
    CHECK(a.ndim() == 3);
    CHECK(a.Size() == 24);
    CHECK(a.ctx() == Context::CPU());
    CHECK(a.byte_offset() == 0);
    CHECK(a.chunk()->bytes == 24 * DTypeSize(t));
    CHECK(a.data().bytes() == 24 * DTypeSize(t));
    CHECK(a.Footer() == "[NDArray " + std::string(DTypeName(t)) + " 2x3x4 @cpu(0)]");
  }
  CHECK(DTypeSize(DType::kFloat16) == 2);
  CHECK(DTypeSize(DType::kBFloat16) == 2);
  CHECK(DTypeSize(DType::kBool) == 1);
  CHECK(DTypeSize(DType::kInt64) == 8);
  CHECK(NDArray(Shape{5}, Context::CPUPinned()).ctx() == Context::CPUPinned());
  CHECK(ErrorOf([] {
          NDArray(Shape{2, 0}, Context::CPU());
        }) == "NDArray: shape (2,0) has an unknown (0) dimension");
  CHECK(Contains(ErrorOf([] { NDArray(Shape{}, Context::CPU()); }), "unknown"));
  // Copying an NDArray copies the view, not the data.
  NDArray a = Array({2}, {1, 2});
  NDArray b = a;
  CHECK(b.SameChunk(a));
}

TEST_CASE("every dtype holds its values") {
  CheckClose(Array({3}, {-1.5, 0, 2.25}, DType::kFloat16), {-1.5, 0, 2.25}, 0, 0);
  CheckClose(Array({3}, {-1.5, 0, 256}, DType::kBFloat16), {-1.5, 0, 256}, 0, 0);
  CheckClose(Array({2}, {0, 255}, DType::kUint8), {0, 255}, 0, 0);
  CheckClose(Array({2}, {-128, 127}, DType::kInt8), {-128, 127}, 0, 0);
  CheckClose(Array({2}, {0, 1}, DType::kBool), {0, 1}, 0, 0);
  NDArray big(Shape{1}, Context::CPU(), DType::kInt64);
  const int64_t v = (int64_t{1} << 62) + 1;
  big.SyncCopyFromCPU(&v, 1);
  int64_t back = 0;
  big.SyncCopyToCPU(&back, 1);
  CHECK(back == v);
}

TEST_CASE("delay_alloc arrays get memory when first written") {
  NDArray a(Shape{1024}, Context::CPU(), DType::kFloat32, /*delay_alloc=*/true);
  CHECK(a.chunk()->handle.dptr == nullptr);
  CHECK(a.Size() == 1024);
  NDArray v = a.Reshape(Shape{32, 32});  // views need no memory either
  CHECK(a.chunk()->handle.dptr == nullptr);
  QuadraticInto(Array({32, 32}, std::vector<double>(1024, 2.0)), v, 0, 1, 1);
  CHECK(a.chunk()->handle.dptr != nullptr);
  CheckClose(a, std::vector<double>(1024, 3.0));
}

TEST_CASE("Reshape with a plain shape is a view") {
  NDArray a = Array({2, 3}, Iota(6));
  NDArray r = a.Reshape(Shape{3, 2});
  CHECK(r.SameChunk(a));
  CHECK(r.shape() == Shape{3, 2});
  CheckClose(r, Iota(6), 0, 0);
  CHECK(ErrorOf([&] {
          a.Reshape(Shape{4, 2});
        }) == "reshape: cannot view an array of shape (2,3) (6 elements) as (4,2)");
  CHECK(Contains(ErrorOf([] { NDArray().Reshape(Shape{1}); }), "the array is empty"));
}

TEST_CASE("Reshape codes 0, -1, -2, -3, -4 and reverse") {
  const Shape s{2, 3, 4};
  auto R = [](const Shape& src, std::vector<int64_t> spec, bool reverse = false) {
    return InferReshape(src, spec, reverse);
  };
  // The examples of MXNet's reshape documentation.
  CHECK(R(s, {4, 0, 2}) == Shape{4, 3, 2});
  CHECK(R(s, {2, 0, 0}) == Shape{2, 3, 4});
  CHECK(R(s, {6, 1, -1}) == Shape{6, 1, 4});
  CHECK(R(s, {3, -1, 8}) == Shape{3, 1, 8});
  CHECK(R(s, {-1}) == Shape{24});
  CHECK(R(s, {-2}) == Shape{2, 3, 4});
  CHECK(R(s, {2, -2}) == Shape{2, 3, 4});
  CHECK(R(s, {-2, 1, 1}) == Shape{2, 3, 4, 1, 1});
  CHECK(R(s, {-3, 4}) == Shape{6, 4});
  CHECK(R(Shape{2, 3, 4, 5}, {-3, -3}) == Shape{6, 20});
  CHECK(R(s, {0, -3}) == Shape{2, 12});
  CHECK(R(Shape{2, 3, 4, 5}, {-3, -2}) == Shape{6, 4, 5});
  CHECK(R(s, {-4, 1, 2, -2}) == Shape{1, 2, 3, 4});
  CHECK(R(s, {2, -4, -1, 3, -2}) == Shape{2, 1, 3, 4});
  CHECK(R(Shape{10, 5, 4}, {-1, 0}) == Shape{40, 5});
  CHECK(R(Shape{10, 5, 4}, {-1, 0}, true) == Shape{50, 4});
  CHECK(R(Shape{10, 5, 4}, {0, -1}, true) == Shape{5, 40});
  // Through NDArray::Reshape: a view of the same memory.
  NDArray a = Array(s, Iota(24));
  NDArray v = a.Reshape(std::vector<int64_t>{-4, 1, 2, -2});
  CHECK(v.shape() == Shape{1, 2, 3, 4});
  CHECK(v.SameChunk(a));
  CHECK(a.Reshape({-1, 0}, true).shape() == Shape{6, 4});
  CheckClose(v, Iota(24), 0, 0);
}

TEST_CASE("Reshape code errors name the shapes and the rule") {
  const Shape s{2, 3, 4};
  auto E = [&](std::vector<int64_t> spec) {
    return ErrorOf([&] { InferReshape(s, spec, false); });
  };
  CHECK(E({-1, -1}) == "reshape: cannot reshape (2,3,4) to (-1,-1): more than one -1");
  CHECK(Contains(E({0, 0, 0, 0}), "0 copies a dimension the source does not have"));
  CHECK(Contains(E({0, 0, -3}), "-3 needs two source dimensions to merge"));
  CHECK(Contains(E({-4, 2}), "-4 must be followed by two values"));
  CHECK(Contains(E({-4, -1, -1, -2}), "one of them may be -1"));
  CHECK(Contains(E({-4, 1, 3, -2}), "-4 split sizes do not multiply to 2"));
  CHECK(Contains(E({-5}), "unknown code -5"));
  CHECK(Contains(E({5, -1}), "the size does not divide evenly"));
  CHECK(Contains(E({5, 5}), "the result has 25 elements, the source 24"));
  CHECK(Contains(ErrorOf([&] {
                   InferReshape(s, {5, -1}, true, "Reshape");
                 }),
                 "Reshape: cannot reshape (2,3,4) to (5,-1) (reverse)"));
  NDArray a(s, Context::CPU());
  CHECK(Contains(ErrorOf([&] { a.Reshape(std::vector<int64_t>{7}); }),
                 "cannot reshape (2,3,4) to (7)"));
}

TEST_CASE("Slice and At are views: writes go both ways") {
  NDArray base = Array({4, 2}, Iota(8));
  NDArray rows = base.Slice(1, 3);
  CHECK(rows.shape() == Shape{2, 2});
  CHECK(rows.SameChunk(base));
  CHECK(rows.byte_offset() == 2 * sizeof(float));
  CheckClose(rows, {2, 3, 4, 5}, 0, 0);
  NDArray row = base.At(3);
  CHECK(row.shape() == Shape{2});
  CheckClose(row, {6, 7}, 0, 0);
  NDArray one = Array({3}, {5, 6, 7}).At(1);  // 1-D: shape (1)
  CHECK(one.shape() == Shape{1});
  CheckClose(one, {6}, 0, 0);
  // Slices of slices add their offsets.
  NDArray inner = base.Slice(1, 4).Slice(1, 2);
  CheckClose(inner, {4, 5}, 0, 0);

  // Host writes through the view show in the base, and the other way.
  const float w[4] = {-1, -2, -3, -4};
  rows.SyncCopyFromCPU(w, 4);
  CheckClose(base, {0, 1, -1, -2, -3, -4, 6, 7}, 0, 0);
  const float all[8] = {10, 11, 12, 13, 14, 15, 16, 17};
  base.SyncCopyFromCPU(all, 8);
  CheckClose(rows, {12, 13, 14, 15}, 0, 0);

  // An op writing a view (out=view) changes only those elements.
  QuadraticInto(Array({2}, {1, 2}), row, 0, 1, 100);
  CheckClose(base, {10, 11, 12, 13, 14, 15, 101, 102}, 0, 0);
  // In place on a view: x = x + 1 on rows 1..2.
  std::vector<NDArray> self{rows};
  Invoke(MakeAttrs("quadratic", {{"b", "1"}, {"c", "1"}}), {rows}, &self);
  CheckClose(base, {10, 11, 13, 14, 15, 16, 101, 102}, 0, 0);
  // Accumulating into a view.
  QuadraticInto(Array({2, 2}, {1, 1, 1, 1}), rows, 0, 0, 1, kAddTo);
  CheckClose(base, {10, 11, 14, 15, 16, 17, 101, 102}, 0, 0);
  // Overlapping views: the op reads rows 0..1 and writes rows 1..2 of the
  // same array; the result must be computed from the values before the write.
  NDArray col = Array({3, 1}, {1, 2, 3});
  QuadraticInto(col.Slice(0, 2), col.Slice(1, 3), 1, 0, 0);
  CheckClose(col, {1, 1, 4}, 0, 0);
  // A reshaped slice still aliases the base.
  NDArray flat = base.Slice(0, 2).Reshape(Shape{4});
  QuadraticInto(Array({4}, {0, 0, 0, 0}), flat, 0, 0, 7);
  CheckClose(base, {7, 7, 7, 7, 16, 17, 101, 102}, 0, 0);
}

TEST_CASE("Slice and At errors") {
  NDArray a(Shape{4, 2}, Context::CPU());
  CHECK(ErrorOf([&] { a.Slice(2, 2); }) ==
        "slice: range [2, 2) is invalid for the first axis of shape (4,2) (need 0 <= begin < end "
        "<= 4)");
  CHECK(Contains(ErrorOf([&] { a.Slice(0, 5); }), "range [0, 5) is invalid"));
  CHECK(Contains(ErrorOf([&] { a.Slice(-1, 2); }), "range [-1, 2) is invalid"));
  CHECK(ErrorOf([&] { a.At(4); }) ==
        "index 4 is out of range for the first axis of shape (4,2) (valid: 0 to 3)");
  CHECK(Contains(ErrorOf([&] { a.At(-1); }), "index -1 is out of range"));
  CHECK(Contains(ErrorOf([] { NDArray().Slice(0, 1); }), "slice: the array is empty"));
  CHECK(Contains(ErrorOf([] { NDArray().At(0); }), "at: the array is empty"));
}

TEST_CASE("CopyTo and CopyFromTo") {
  NDArray a = Array({2, 3}, Iota(6));
  NDArray b = a.CopyTo(Context::CPU());
  CHECK(!b.SameChunk(a));
  CheckClose(b, Iota(6), 0, 0);
  // The copy is independent of the source afterwards.
  QuadraticInto(a, a, 0, 0, -1);
  CheckClose(b, Iota(6), 0, 0);
  CheckClose(a, std::vector<double>(6, -1), 0, 0);
  // A view copies only its elements; copying into a view writes only there.
  NDArray c = Array({3, 2}, Iota(6, 10)).At(1).CopyTo(Context::CPU());
  CHECK(c.shape() == Shape{2});
  CheckClose(c, {12, 13}, 0, 0);
  CopyFromTo(c, a.At(0).Slice(1, 3));
  CheckClose(a, {-1, 12, 13, -1, -1, -1}, 0, 0);
  // Pinned host memory is host memory.
  CheckClose(a.CopyTo(Context::CPUPinned()).CopyTo(Context::CPU()), {-1, 12, 13, -1, -1, -1}, 0, 0);
  CHECK(ErrorOf([&] { CopyFromTo(a, c); }) ==
        "copyto: source shape (2,3) differs from destination (2,)");
  CHECK(ErrorOf([&] {
          CopyFromTo(c, Array({2}, {0, 0}, DType::kInt32));
        }) == "copyto: source dtype float32 differs from destination int32 (use astype)");
  CHECK(Contains(ErrorOf([&] { CopyFromTo(NDArray(), a); }), "copyto: an array is empty"));
  CHECK(Contains(ErrorOf([] { NDArray().CopyTo(Context::CPU()); }), "copyto: the array is empty"));
}

TEST_CASE("SyncCopyFromCPU / SyncCopyToCPU check the element count") {
  NDArray a(Shape{2, 3}, Context::CPU());
  std::vector<float> host(6, 1.f);
  CHECK(ErrorOf([&] { a.SyncCopyFromCPU(host.data(), 5); }) ==
        "SyncCopyFromCPU: 5 elements given for an array of shape (2,3) (6 elements)");
  CHECK(ErrorOf([&] { a.SyncCopyToCPU(host.data(), 7); }) ==
        "SyncCopyToCPU: room for 7 elements given for an array of shape (2,3) (6 elements)");
  CHECK(Contains(ErrorOf([&] { NDArray().SyncCopyToCPU(host.data(), 1); }), "empty (none)"));
  a.SyncCopyFromCPU(host.data(), 6);
  // A view copies its own elements only.
  const float two[3] = {5, 6, 7};
  a.At(1).SyncCopyFromCPU(two, 3);
  float back[3] = {};
  a.At(1).SyncCopyToCPU(back, 3);
  CHECK(back[2] == 7);
  CheckClose(a, {1, 1, 1, 5, 6, 7}, 0, 0);
}

TEST_CASE("AsType converts as C++ casts do") {
  NDArray x = Array({5}, {-2.75, -0.5, 0, 1.5, 300});
  NDArray i = x.AsType(DType::kInt32);
  CHECK(i.dtype() == DType::kInt32);
  CHECK(i.shape() == Shape{5});
  CheckClose(i, {-2, 0, 0, 1, 300}, 0, 0);
  CheckClose(x.AsType(DType::kBool), {1, 1, 0, 1, 1}, 0, 0);
  CheckClose(x.AsType(DType::kFloat64), {-2.75, -0.5, 0, 1.5, 300}, 0, 0);
  CheckClose(x.AsType(DType::kFloat16), {-2.75, -0.5, 0, 1.5, 300}, 0, 0);
  // A view converts only its elements.
  CheckClose(x.Slice(3, 5).AsType(DType::kInt64), {1, 300}, 0, 0);
  CHECK(Contains(ErrorOf([] { NDArray().AsType(DType::kInt8); }), "astype: the array is empty"));
}

TEST_CASE("WaitToWrite waits for pending readers, WaitToRead for writers") {
  NDArray x = Array({4}, {1, 2, 3, 4}, DType::kFloat64);
  const int before = op::slow_copies_done.load();
  NDArray y = Invoke("_test_slow_copy", {x})[0];  // reads x for 30 ms
  x.WaitToWrite();                                // must wait for that reader
  CHECK(op::slow_copies_done.load() == before + 1);
  NDArray z = Invoke("_test_slow_copy", {y})[0];
  z.WaitToRead();
  CHECK(op::slow_copies_done.load() == before + 2);
  CheckClose(z, {1, 2, 3, 4}, 0, 0);
  // A host write right after a pushed reader: the reader sees the old values.
  NDArray w = Invoke("_test_slow_copy", {x})[0];
  const double fresh[4] = {9, 9, 9, 9};
  x.SyncCopyFromCPU(fresh, 4);
  CheckClose(w, {1, 2, 3, 4}, 0, 0);
  CheckClose(x, {9, 9, 9, 9}, 0, 0);
}

namespace {

// A random sequence of pushed ops on views of a few arrays, mirrored on host
// vectors; the arrays must match the mirror at every check.
struct StressWorld {
  static constexpr int kRows = 6, kCols = 3;
  std::vector<NDArray> arrays;
  std::vector<std::vector<double>> mirror;
  std::mt19937 gen;

  StressWorld(int n, uint32_t seed) : gen(seed) {
    for (int i = 0; i < n; ++i) {
      std::vector<double> v(kRows * kCols);
      for (double& x : v) x = static_cast<int>(gen() % 7) - 3;
      arrays.push_back(Array({kRows, kCols}, v, DType::kFloat64));
      mirror.push_back(v);
    }
  }
  int Rand(int n) { return static_cast<int>(gen() % static_cast<uint32_t>(n)); }

  void Step() {
    const int src = Rand(int(arrays.size())), dst = Rand(int(arrays.size()));
    const int len = 1 + Rand(kRows);
    const int sb = Rand(kRows - len + 1), db = Rand(kRows - len + 1);
    const NDArray sv = arrays[src].Slice(sb, sb + len), dv = arrays[dst].Slice(db, db + len);
    // Small integer coefficients keep the values exact in float64.
    const double b = Rand(3) - 1, c = Rand(5) - 2;
    std::vector<double>& sm = mirror[src];
    std::vector<double>& dm = mirror[dst];
    const std::vector<double> in(sm.begin() + sb * kCols, sm.begin() + (sb + len) * kCols);
    auto out = [&](int k) -> double& { return dm[db * kCols + k]; };
    switch (Rand(5)) {
      case 0:  // write
        QuadraticInto(sv, dv, 0, b, c);
        for (size_t k = 0; k < in.size(); ++k) out(int(k)) = b * in[k] + c;
        break;
      case 1:  // accumulate
        QuadraticInto(sv, dv, 0, b, c, kAddTo);
        for (size_t k = 0; k < in.size(); ++k) out(int(k)) += b * in[k] + c;
        break;
      case 2:  // copy between views
        CopyFromTo(sv, dv);
        for (size_t k = 0; k < in.size(); ++k) out(int(k)) = in[k];
        break;
      case 3: {  // host write into a view
        std::vector<double> v(in.size());
        for (double& x : v) x = Rand(9) - 4;
        dv.SyncCopyFromCPU(v.data(), v.size());
        for (size_t k = 0; k < v.size(); ++k) out(int(k)) = v[k];
        break;
      }
      default: {  // read a view now
        const int r = Rand(int(arrays.size()));
        const std::vector<double> got = arrays[r].ToVector();
        REQUIRE(got == mirror[r]);
      }
    }
    // Keep the values small: clamp through the mirror when they grow.
    for (size_t i = 0; i < arrays.size(); ++i)
      for (double x : mirror[i])
        if (std::fabs(x) > 1e6) {
          std::vector<double> zeros(mirror[i].size(), 0.0);
          arrays[i].SyncCopyFromCPU(zeros.data(), zeros.size());
          mirror[i] = zeros;
          break;
        }
  }
  void CheckAll() {
    for (size_t i = 0; i < arrays.size(); ++i) CHECK(arrays[i].ToVector() == mirror[i]);
  }
};

}  // namespace

TEST_CASE("randomized ops on views match a sequential reference") {
  StressWorld world(3, 11);
  for (int step = 0; step < 600; ++step) world.Step();
  world.CheckAll();
}

TEST_CASE("concurrent pushing threads, each with its own arrays") {
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &failures] {
      StressWorld world(2, 100 + t);
      for (int step = 0; step < 250; ++step) world.Step();
      for (size_t i = 0; i < world.arrays.size(); ++i)
        if (world.arrays[i].ToVector() != world.mirror[i]) failures.fetch_add(1);
    });
  }
  // Meanwhile this thread reads and writes a shared array from its own views.
  NDArray shared = Array({8}, Iota(8), DType::kFloat64);
  for (int i = 0; i < 50; ++i)
    QuadraticInto(shared.Slice(i % 8, i % 8 + 1), shared.Slice(i % 8, i % 8 + 1), 0, 1, 1);
  for (auto& th : threads) th.join();
  CHECK(failures.load() == 0);
  std::vector<double> want = Iota(8);
  for (int i = 0; i < 50; ++i) want[i % 8] += 1;
  CheckClose(shared, want, 0, 0);
}

TEST_CASE("an op failing in its kernel poisons its outputs until they are overwritten") {
  NDArray good = Array({3}, {1, 2, 3}, DType::kFloat64);
  NDArray bad = Array({3}, {1, -2, 3}, DType::kFloat64);
  // Shape and dtype are fine, so the call returns; the kernel fails later.
  NDArray y = Invoke("_test_checked_copy", {bad})[0];
  NDArray z = Invoke("quadratic", {y}, {{"c", "1"}})[0];  // reads the poisoned y: skipped
  const std::string msg = ErrorOf([&] { z.WaitToRead(); });
  CHECK(Contains(msg, "_test_checked_copy"));
  CHECK(Contains(msg, "element 1 is negative (-2)"));
  // Reported, the error stays: y and z, and anything computed from them,
  // raise it at every read, and never read back stale memory.
  CHECK(ErrorOf([&] { y.WaitToRead(); }) == msg);
  CHECK(ErrorOf([&] { z.WaitToRead(); }) == msg);
  CHECK(ErrorOf([&] { y.ToVector(); }) == msg);
  NDArray w = Invoke("quadratic", {z}, {{"c", "1"}})[0];
  CHECK(ErrorOf([&] { w.WaitToRead(); }) == msg);
  // Accumulating into a poisoned array, or writing part of it, reads it.
  std::vector<NDArray> acc{z};
  InvokeOptions add;
  add.req = {kAddTo};
  Invoke(MakeAttrs("_test_checked_copy"), {good}, &acc, add);
  CHECK(ErrorOf([&] { z.WaitToRead(); }) == msg);
  // The arrays work again once overwritten.
  std::vector<NDArray> outs{y};
  Invoke(MakeAttrs("_test_checked_copy"), {good}, &outs);
  CheckClose(y, {1, 2, 3}, 0, 0);
  CheckClose(Invoke("quadratic", {y}, {{"c", "1"}})[0], {1, 1, 1}, 0, 0);
  // Poison through a view: the whole chunk is poisoned, a wait on the base reports it.
  NDArray base = Array({2, 3}, Iota(6), DType::kFloat64);
  std::vector<NDArray> view{base.At(1)};
  Invoke(MakeAttrs("_test_checked_copy"), {bad}, &view);
  CHECK(Contains(ErrorOf([&] { base.WaitToRead(); }), "element 1 is negative"));
  // Writing the other row replaces only part of the chunk: still poisoned.
  std::vector<NDArray> row0{base.At(0)};
  Invoke(MakeAttrs("_test_checked_copy"), {good}, &row0);
  CHECK(Contains(ErrorOf([&] { base.WaitToRead(); }), "element 1 is negative"));
  CopyFromTo(good, base.At(0));
  CHECK(Contains(ErrorOf([&] { base.WaitToRead(); }), "element 1 is negative"));
  const double fresh[6] = {0, 1, 2, 3, 4, 5};
  base.SyncCopyFromCPU(fresh, 6);
  CheckClose(base, Iota(6), 0, 0);
  // Nothing left unreported for later tests.
  CHECK(ErrorOf([] { engine::Engine::Get()->WaitForAll(); }) == "");
}

TEST_CASE("freed arrays return their memory to the pool") {
  constexpr size_t kBytes = size_t{3} << 20;  // bigger than anything else alive here
  const storage::StorageStats before = CpuStats();
  {
    NDArray a(Shape{int64_t(kBytes / 4)}, Context::CPU());
    const storage::StorageStats during = CpuStats();
    CHECK(during.bytes_in_use >= before.bytes_in_use + kBytes);
    NDArray view = a.Slice(1, 2);
    a = NDArray();  // the view keeps the chunk alive
    CHECK(CpuStats().bytes_in_use >= before.bytes_in_use + kBytes);
    QuadraticInto(Array({1}, {1}), view, 0, 0, 5);
    CheckClose(view, {5});
  }
  // Freeing is pushed after the array's last op; WaitForAll lets it run.
  const storage::StorageStats after = CpuStats();
  CHECK(after.bytes_in_use == before.bytes_in_use);
  CHECK(after.bytes_pooled >= kBytes);
  // The next array of that size comes from the pool.
  NDArray again(Shape{int64_t(kBytes / 4)}, Context::CPU());
  CHECK(CpuStats().num_pool_hits > after.num_pool_hits);
}

TEST_CASE("a poisoned array's memory returns to the pool") {
  constexpr int64_t kCount = int64_t{3} << 18;  // 3 MB of float32
  const storage::StorageStats before = CpuStats();
  {
    NDArray bad(Shape{kCount}, Context::CPU(), DType::kFloat64);
    std::vector<double> values(kCount, 1.0);
    values[7] = -1;
    bad.SyncCopyFromCPU(values.data(), kCount);
    NDArray y = Invoke("_test_checked_copy", {bad})[0];
    CHECK(Contains(ErrorOf([&] { y.WaitToRead(); }), "element 7 is negative"));
  }
  engine::Engine::Get()->WaitForAll();
  CHECK(CpuStats().bytes_in_use == before.bytes_in_use);
}

TEST_CASE("tiny ops run at once when their inputs are ready, in order when not") {
  NDArray a = Array({2}, {1, 2}), b = Array({2}, {10, 20});
  a.WaitToRead();
  b.WaitToRead();
  // Ready inputs: the op has run by the time the call returns.
  NDArray c = Invoke("elemwise_add", {a, b})[0];
  // Written here and now, the new output needed no engine variable yet.
  CHECK(c.chunk()->var_if_made() == nullptr);
  CHECK(engine::Engine::IsSettled(c.var()));
  CHECK(c.chunk()->var_if_made() == c.var());  // made on first need, once
  CheckClose(c, {11, 22});
  // An input still being written: the tiny op waits for that write.
  std::atomic<bool> release{false};
  engine::Engine::Get()->PushSync(
      [&, p = static_cast<float*>(a.data().dptr_)](RunContext) {
        while (!release.load()) std::this_thread::yield();
        p[0] = 100;
      },
      Context::CPU(), {}, {a.var()});
  NDArray d = Invoke("elemwise_add", {a, b})[0];
  CHECK_FALSE(engine::Engine::IsSettled(d.var()));
  release = true;
  CheckClose(d, {110, 22});
  // Ops over more elements go to a worker as before.
  NDArray big = Invoke("_ones", {}, {{"shape", "(4096,)"}})[0];
  CheckClose(Invoke("sum", {big})[0], {4096});
}

TEST_CASE("repeated calls of one attributes object infer each call's shapes and dtypes") {
  // One parsed attributes object, as Lua's `a + b` uses: a repeat with the
  // same inputs may reuse the last inference, any change must not.
  auto add = MakeAttrs("broadcast_add");
  auto call = [&](const NDArray& x, const NDArray& y) {
    std::vector<NDArray> out;
    Invoke(add, {x, y}, &out);
    return out[0];
  };
  NDArray a = Array({2, 3}, Iota(6)), b = Array({1, 3}, {10, 20, 30});
  for (int i = 0; i < 2; ++i) {
    NDArray c = call(a, b);
    CHECK(c.shape() == Shape{2, 3});
    CheckClose(c, {10, 21, 32, 13, 24, 35});
  }
  NDArray col = Array({2, 1}, {1, 2}), row = Array({1, 4}, {0, 10, 20, 30});
  NDArray d = call(col, row);
  CHECK(d.shape() == Shape{2, 4});
  CheckClose(d, {1, 11, 21, 31, 2, 12, 22, 32});
  NDArray e = call(a.AsType(DType::kFloat64), b.AsType(DType::kFloat64));
  CHECK(e.dtype() == DType::kFloat64);
  CheckClose(e, {10, 21, 32, 13, 24, 35});
  CHECK(call(a, b).dtype() == DType::kFloat32);
  // A bad pair after good ones is still refused.
  CHECK_THROWS_AS(call(a, Array({4}, {1, 2, 3, 4})), Error);
  CHECK(call(a, b).shape() == Shape{2, 3});
}

TEST_CASE("a chunk's variable is made once when threads ask for it together") {
  for (int rep = 0; rep < 100; ++rep) {
    NDArray a(Shape{4}, Context::CPU());
    REQUIRE(a.chunk()->var_if_made() == nullptr);
    std::atomic<int> ready{0};
    std::vector<VarHandle> seen(4);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        ready.fetch_add(1);
        while (ready.load() < 4) {
        }
        seen[t] = a.var();
      });
    for (auto& th : threads) th.join();
    CHECK(seen[0] != nullptr);
    for (VarHandle v : seen) CHECK(v == seen[0]);
    CHECK(a.chunk()->var_if_made() == seen[0]);
  }
}

TEST_CASE("GPU contexts without a GPU raise clear errors") {
  if (NumGPUs() > 0) {
    // With a GPU: values go there and back, views included.
    NDArray a = Array({3, 2}, Iota(6));
    NDArray g = a.CopyTo(Context::GPU(0));
    CHECK(g.ctx() == Context::GPU(0));
    CheckClose(g, Iota(6), 0, 0);
    CheckClose(g.At(1).CopyTo(Context::CPU()), {2, 3}, 0, 0);
    CheckClose(Invoke("quadratic", {g}, {{"b", "1"}, {"c", "1"}})[0], Iota(6, 1), 0, 0);
    return;
  }
  const std::string expected =
      BuiltWithCUDA() ? "gpu(0) is not available: 0 GPUs" : "gpu(0): this build has no CUDA";
  CHECK(ErrorOf([] { NDArray(Shape{2}, Context::GPU(0)); }) == expected);
  NDArray a = Array({2}, {1, 2});
  CHECK(ErrorOf([&] { a.CopyTo(Context::GPU(0)); }) == expected);
  CHECK(ErrorOf([&] { CopyFromTo(a, NDArray(Shape{2}, Context::GPU(0))); }) == expected);
}

// An unallocated chunk is deleted without touching its device's lanes, so a
// delay-alloc array on a GPU this build cannot use goes away cleanly.
TEST_CASE("a delay-alloc array on an unusable GPU context is destroyed cleanly") {
  if (NumGPUs() > 0) return;
  {
    NDArray lazy(Shape{2}, Context::GPU(0), DType::kFloat32, /*delay_alloc=*/true);
    CHECK(lazy.ctx() == Context::GPU(0));
    CHECK(Contains(ErrorOf([&] { lazy.data(); }), "gpu(0)"));
  }
  engine::Engine::Get()->WaitForAll();
}
