// Creation ops (_zeros, _ones, _full, _empty, _arange, _eye, _linspace) and
// random ops (_random_uniform, _random_normal, _random_randint, _shuffle).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "engine/ndarray/imperative.h"
#include "engine/resource/resource.h"
#include "tests/cpp/op_test_util.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using tessera::test::Array;
using tessera::test::CheckClose;
using tessera::test::Contains;
using tessera::test::ErrorOf;
using tessera::test::Run;

namespace {

const DType kAllTypes[] = {DType::kFloat32,  DType::kFloat64, DType::kFloat16,
                           DType::kBFloat16, DType::kUint8,   DType::kInt8,
                           DType::kInt32,    DType::kInt64,   DType::kBool};

std::vector<double> Repeat(double v, size_t n) {
  return std::vector<double>(n, v);
}

void Seed(uint64_t s) {
  resource::ResourceManager::Get()->SeedRandom(s);
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}
double Variance(const std::vector<double>& v) {
  const double m = Mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / double(v.size());
}

}  // namespace

TEST_CASE("zeros, ones and full fill every dtype") {
  for (DType t : kAllTypes) {
    INFO(DTypeName(t));
    NDArray z = Run("_zeros", {}, {{"shape", "(2,3)"}, {"dtype", DTypeName(t)}});
    CHECK(z.shape() == Shape{2, 3});
    CHECK(z.dtype() == t);
    CheckClose(z, Repeat(0, 6));
    CheckClose(Run("ones", {}, {{"shape", "(4,)"}, {"dtype", DTypeName(t)}}), Repeat(1, 4));
    const double expected = t == DType::kBool ? 1 : IsInteger(t) ? 2 : 2.5;
    CheckClose(Run("full", {}, {{"shape", "(3,)"}, {"value", "2.5"}, {"dtype", DTypeName(t)}}),
               Repeat(expected, 3));
    NDArray e = Run("empty", {}, {{"shape", "(2,2)"}, {"dtype", DTypeName(t)}});
    CHECK(e.shape() == Shape{2, 2});
    CHECK(e.dtype() == t);
  }
  // The default dtype is float32; integer fills saturate instead of wrapping.
  CHECK(Run("_zeros", {}, {{"shape", "(1,)"}}).dtype() == DType::kFloat32);
  CheckClose(Run("_full", {}, {{"shape", "(2,)"}, {"value", "300"}, {"dtype", "uint8"}}),
             {255, 255});
  CheckClose(Run("_full", {}, {{"shape", "(2,)"}, {"value", "-300"}, {"dtype", "int8"}}),
             {-128, -128});
  CheckClose(Run("_full", {}, {{"shape", "(1,)"}, {"value", "-1"}, {"dtype", "uint8"}}), {0});
  CheckClose(Run("_full", {}, {{"shape", "(1,)"}, {"value", "1e30"}, {"dtype", "int64"}}),
             {9223372036854775807.0});
  CheckClose(Run("_full", {}, {{"shape", "(1,)"}, {"value", "nan"}, {"dtype", "int32"}}), {0});
}

TEST_CASE("creation ops honour the ctx parameter") {
  CHECK(Run("_ones", {}, {{"shape", "(2,)"}, {"ctx", "cpu(0)"}}).ctx() == Context::CPU());
  if (!BuiltWithCUDA()) {
    CHECK(Contains(ErrorOf([] {
                     Run("_ones", {}, {{"shape", "(2,)"}, {"ctx", "gpu(0)"}});
                   }),
                   "this build has no CUDA"));
  }
}

TEST_CASE("arange: start/stop/step, repeat, negative steps, integer dtypes") {
  CheckClose(Run("_arange", {}, {{"start", "2"}, {"stop", "6"}, {"step", "1.5"}}), {2, 3.5, 5});
  CheckClose(Run("arange", {}, {{"start", "3"}}), {0, 1, 2});
  CheckClose(Run("_arange", {}, {{"start", "0"}, {"stop", "2"}, {"repeat", "2"}}), {0, 0, 1, 1});
  CheckClose(Run("_arange", {}, {{"start", "5"}, {"stop", "1"}, {"step", "-2"}}), {5, 3});
  // Computed in double, then converted: truncation for integers.
  NDArray i =
      Run("_arange", {}, {{"start", "0"}, {"stop", "5"}, {"step", "1.5"}, {"dtype", "int32"}});
  CHECK(i.dtype() == DType::kInt32);
  CheckClose(i, {0, 1, 3, 4});
  CheckClose(Run("_arange", {},
                 {{"start", "0.1"}, {"stop", "0.4"}, {"step", "0.1"}, {"dtype", "float64"}}),
             {0.1, 0.2, 0.30000000000000004, 0.4}, 0, 1e-15);
  for (DType t : kAllTypes) {
    INFO(DTypeName(t));
    const std::vector<double> expected =
        t == DType::kBool ? std::vector<double>{0, 1, 1} : std::vector<double>{0, 1, 2};
    CheckClose(Run("_arange", {}, {{"start", "3"}, {"dtype", DTypeName(t)}}), expected);
  }
}

TEST_CASE("eye: square, rectangular, diagonals above and below") {
  CheckClose(Run("_eye", {}, {{"N", "2"}}), {1, 0, 0, 1});
  NDArray a = Run("eye", {}, {{"N", "2"}, {"M", "3"}, {"k", "1"}});
  CHECK(a.shape() == Shape{2, 3});
  CheckClose(a, {0, 1, 0, 0, 0, 1});
  CheckClose(Run("_eye", {}, {{"N", "3"}, {"k", "-1"}, {"dtype", "int64"}}),
             {0, 0, 0, 1, 0, 0, 0, 1, 0});
  CheckClose(Run("_eye", {}, {{"N", "2"}, {"k", "5"}}), {0, 0, 0, 0});
  CheckClose(Run("_eye", {}, {{"N", "2"}, {"dtype", "bool"}}), {1, 0, 0, 1});
}

TEST_CASE("linspace: endpoint, half-open, single value, integer dtype") {
  CheckClose(Run("_linspace", {}, {{"start", "0"}, {"stop", "1"}, {"num", "5"}}),
             {0, 0.25, 0.5, 0.75, 1});
  CheckClose(
      Run("linspace", {}, {{"start", "0"}, {"stop", "1"}, {"num", "4"}, {"endpoint", "False"}}),
      {0, 0.25, 0.5, 0.75});
  CheckClose(Run("_linspace", {}, {{"start", "3"}, {"stop", "7"}, {"num", "1"}}), {3});
  CheckClose(
      Run("_linspace", {}, {{"start", "2"}, {"stop", "-1"}, {"num", "4"}, {"dtype", "int32"}}),
      {2, 1, 0, -1});
  // The last value is exactly stop (0.1 * 3 would round to 0.30000000000000004).
  NDArray l =
      Run("_linspace", {}, {{"start", "0"}, {"stop", "0.3"}, {"num", "4"}, {"dtype", "float64"}});
  CHECK(l.ToVector().back() == 0.3);
}

TEST_CASE("creation ops honour write, add and views") {
  NDArray out = Array({3}, {10, 20, 30});
  std::vector<NDArray> outs{out};
  InvokeOptions add;
  add.req = {kAddTo};
  Invoke(MakeAttrs("_ones", {{"shape", "(3,)"}}), {}, &outs, add);
  CheckClose(out, {11, 21, 31});
  Invoke(MakeAttrs("_arange", {{"start", "3"}}), {}, &outs, add);
  CheckClose(out, {11, 22, 33});
  Invoke(MakeAttrs("_zeros", {{"shape", "(3,)"}}), {}, &outs, add);
  CheckClose(out, {11, 22, 33});
  Invoke(MakeAttrs("_empty", {{"shape", "(3,)"}}), {}, &outs, add);
  CheckClose(out, {11, 22, 33});
  InvokeOptions null;
  null.req = {kNullOp};
  Invoke(MakeAttrs("_full", {{"shape", "(3,)"}, {"value", "7"}}), {}, &outs, null);
  CheckClose(out, {11, 22, 33});
  Invoke(MakeAttrs("_full", {{"shape", "(3,)"}, {"value", "7"}}), {}, &outs);
  CheckClose(out, {7, 7, 7});
  // Writing into a view writes the base array's rows, and only those.
  NDArray base = Array({3, 2}, {1, 2, 3, 4, 5, 6});
  std::vector<NDArray> view{base.Slice(1, 3)};
  Invoke(MakeAttrs("_eye", {{"N", "2"}}), {}, &view);
  CheckClose(base, {1, 2, 1, 0, 0, 1});
  std::vector<NDArray> flat{base.Reshape(Shape{6})};
  Invoke(MakeAttrs("_arange", {{"start", "6"}}), {}, &flat, add);
  CheckClose(base, {1, 3, 3, 3, 4, 6});
  // infer_range: the length comes from the given output, the values from start and step.
  std::vector<NDArray> ranged{NDArray(Shape{4}, Context::CPU())};
  Invoke(MakeAttrs("_arange", {{"start", "2"}, {"step", "0.5"}, {"infer_range", "True"}}), {},
         &ranged);
  CheckClose(ranged[0], {2, 2.5, 3, 3.5});
  CHECK(Contains(ErrorOf([] {
                   Run("_arange", {}, {{"start", "2"}, {"infer_range", "True"}});
                 }),
                 "_arange: cannot infer the output shape"));
  // The output shape may come from the given output when `shape` is partial.
  std::vector<NDArray> partial{NDArray(Shape{2, 3}, Context::CPU())};
  Invoke(MakeAttrs("_ones", {{"shape", "(0,3)"}}), {}, &partial);
  CheckClose(partial[0], Repeat(1, 6));
}

TEST_CASE("creation ops reject bad parameters at the call") {
  CHECK(Contains(ErrorOf([] {
                   Run("_arange", {}, {{"start", "0"}, {"stop", "3"}, {"step", "0"}});
                 }),
                 "_arange: parameter 'step' must not be 0"));
  CHECK(Contains(ErrorOf([] {
                   Run("_arange", {}, {{"start", "5"}, {"stop", "1"}});
                 }),
                 "_arange: invalid range start=5, stop=1, step=1"));
  CHECK(Contains(ErrorOf([] {
                   Run("_arange", {}, {{"start", "0"}, {"repeat", "0"}});
                 }),
                 "parameter 'repeat' is 0, must be >= 1"));
  CHECK(Contains(ErrorOf([] {
                   Run("_arange", {}, {{"stop", "3"}});
                 }),
                 "_arange: required parameter 'start' is missing"));
  CHECK(Contains(ErrorOf([] {
                   Run("_eye", {}, {{"N", "0"}});
                 }),
                 "_eye: parameter 'N' is 0, must be >= 1"));
  CHECK(Contains(ErrorOf([] {
                   Run("_eye", {}, {{"N", "2"}, {"M", "-1"}});
                 }),
                 "_eye: parameter 'M' is -1, must be >= 0"));
  CHECK(Contains(ErrorOf([] {
                   Run("_linspace", {}, {{"start", "0"}, {"stop", "1"}, {"num", "0"}});
                 }),
                 "_linspace: parameter 'num' is 0, must be >= 1"));
  CHECK(Contains(ErrorOf([] {
                   Run("_zeros", {}, {{"shape", "(2,-1)"}});
                 }),
                 "_zeros: parameter 'shape' got '(2,-1)'"));
  CHECK(Contains(ErrorOf([] { Run("_zeros", {}); }), "_zeros: cannot infer the output shape"));
  CHECK(Contains(ErrorOf([] {
                   Run("_ones", {}, {{"shape", "(2,0)"}});
                 }),
                 "_ones: cannot infer the output shape"));
  CHECK(Contains(ErrorOf([] {
                   Run("_full", {}, {{"shape", "(2,)"}});
                 }),
                 "_full: required parameter 'value' is missing"));
  CHECK(Contains(ErrorOf([] {
                   Run("_ones", {}, {{"shape", "(2,)"}, {"dtype", "float128"}});
                 }),
                 "_ones: parameter 'dtype' got 'float128'"));
  CHECK(Contains(ErrorOf([] {
                   Run("_ones", {}, {{"shape", "(2,)"}, {"ctx", "tpu(0)"}});
                 }),
                 "tpu(0)"));
  // A given output of another shape is a conflict that names both shapes.
  std::vector<NDArray> outs{NDArray(Shape{3}, Context::CPU())};
  CHECK(Contains(ErrorOf([&] {
                   Invoke(MakeAttrs("_eye", {{"N", "2"}}), {}, &outs);
                 }),
                 "_eye: output 0 has shape (3,) but (2,2) is required"));
}

TEST_CASE("random_uniform: reproducible, bounded, right moments") {
  Seed(42);
  const std::vector<double> a =
      Run("_random_uniform", {}, {{"low", "-1"}, {"high", "3"}, {"shape", "(200,500)"}}).ToVector();
  Seed(42);
  const std::vector<double> b =
      Run("uniform", {}, {{"low", "-1"}, {"high", "3"}, {"shape", "(200,500)"}}).ToVector();
  Seed(43);
  const std::vector<double> c =
      Run("random_uniform", {}, {{"low", "-1"}, {"high", "3"}, {"shape", "(200,500)"}}).ToVector();
  CHECK(a == b);
  CHECK(a != c);
  CHECK(*std::min_element(a.begin(), a.end()) >= -1);
  CHECK(*std::max_element(a.begin(), a.end()) < 3);
  CHECK(Mean(a) == doctest::Approx(1.0).epsilon(0.02));
  CHECK(Variance(a) == doctest::Approx(16.0 / 12).epsilon(0.02));
  // Two calls after one seed draw different numbers.
  Seed(42);
  NDArray first = Run("_random_uniform", {}, {{"shape", "(8,)"}});
  NDArray second = Run("_random_uniform", {}, {{"shape", "(8,)"}});
  CHECK(first.ToVector() != second.ToVector());
}

TEST_CASE("random_normal: reproducible, right moments") {
  Seed(7);
  const std::vector<double> a =
      Run("_random_normal", {}, {{"loc", "2"}, {"scale", "3"}, {"shape", "(100000,)"}}).ToVector();
  Seed(7);
  const std::vector<double> b =
      Run("normal", {}, {{"loc", "2"}, {"scale", "3"}, {"shape", "(100000,)"}}).ToVector();
  CHECK(a == b);
  CHECK(Mean(a) == doctest::Approx(2.0).epsilon(0.03));
  CHECK(Variance(a) == doctest::Approx(9.0).epsilon(0.03));
  Seed(7);
  CheckClose(Run("_random_normal", {}, {{"loc", "5"}, {"scale", "0"}, {"shape", "(3,)"}}),
             {5, 5, 5});
}

TEST_CASE("random floats: every float dtype and request draws the same numbers") {
  for (const char* op : {"_random_uniform", "_random_normal"}) {
    INFO(op);
    Seed(5);
    const std::vector<double> f32 = Run(op, {}, {{"shape", "(37,)"}}).ToVector();
    for (DType t : {DType::kFloat16, DType::kBFloat16}) {
      Seed(5);
      NDArray h = Run(op, {}, {{"shape", "(37,)"}, {"dtype", DTypeName(t)}});
      CHECK(h.dtype() == t);
      CheckClose(h, Array({37}, f32).AsType(t).ToVector(), 0, 0);
    }
    for (DType t : {DType::kFloat32, DType::kFloat64}) {
      Seed(9);
      const std::vector<double> written =
          Run(op, {}, {{"shape", "(37,)"}, {"dtype", DTypeName(t)}}).ToVector();
      // kAddTo goes through the block kernel instead of storage's fill: same values.
      Seed(9);
      NDArray acc = Array({37}, Repeat(1, 37), t);
      std::vector<NDArray> outs{acc};
      InvokeOptions add;
      add.req = {kAddTo};
      Invoke(MakeAttrs(op, {{"shape", "(37,)"}, {"dtype", DTypeName(t)}}), {}, &outs, add);
      std::vector<double> expected = written;
      for (double& x : expected) x += 1;
      CheckClose(acc, expected, 1e-6, 1e-6);
    }
  }
  // The dtype may come from a given output when the parameter is None.
  std::vector<NDArray> outs{NDArray(Shape{4}, Context::CPU(), DType::kFloat64)};
  Invoke(MakeAttrs("_random_uniform", {{"shape", "(4,)"}}), {}, &outs);
  CHECK(outs[0].dtype() == DType::kFloat64);
}

TEST_CASE("random_randint: range, every value reached, int64 extremes") {
  Seed(1);
  NDArray r = Run("_random_randint", {}, {{"low", "-3"}, {"high", "4"}, {"shape", "(10000,)"}});
  CHECK(r.dtype() == DType::kInt32);
  const std::vector<double> v = r.ToVector();
  std::set<double> seen(v.begin(), v.end());
  CHECK(seen == std::set<double>{-3, -2, -1, 0, 1, 2, 3});
  CHECK(Mean(v) == doctest::Approx(0.0).epsilon(0.05).scale(1));
  Seed(1);
  CHECK(Run("randint", {}, {{"low", "-3"}, {"high", "4"}, {"shape", "(10000,)"}}).ToVector() == v);
  // The full int64 range.
  NDArray big = Run("_random_randint", {},
                    {{"low", "-9223372036854775808"},
                     {"high", "9223372036854775807"},
                     {"shape", "(1000,)"},
                     {"dtype", "int64"}});
  CHECK(big.dtype() == DType::kInt64);
  std::vector<int64_t> raw(1000);
  big.SyncCopyToCPU(raw.data(), raw.size());
  CHECK(*std::min_element(raw.begin(), raw.end()) < -(int64_t{1} << 60));
  CHECK(*std::max_element(raw.begin(), raw.end()) > (int64_t{1} << 60));
  CHECK(*std::max_element(raw.begin(), raw.end()) < INT64_MAX);
  // A single-value range.
  CheckClose(Run("_random_randint", {}, {{"low", "9"}, {"high", "10"}, {"shape", "(3,)"}}),
             {9, 9, 9});
}

TEST_CASE("random ops reject bad parameters at the call") {
  CHECK(Contains(ErrorOf([] {
                   Run("_random_uniform", {}, {{"low", "2"}, {"high", "1"}, {"shape", "(2,)"}});
                 }),
                 "_random_uniform: low (2) must not exceed high (1)"));
  CHECK(Contains(ErrorOf([] {
                   Run("_random_normal", {}, {{"scale", "-1"}, {"shape", "(2,)"}});
                 }),
                 "_random_normal: parameter 'scale' is -1, must be >= 0"));
  CHECK(Contains(ErrorOf([] {
                   Run("_random_uniform", {}, {{"shape", "(2,)"}, {"dtype", "int32"}});
                 }),
                 "_random_uniform: dtype int32 is not supported (expected a floating-point type)"));
  CHECK(Contains(ErrorOf([] {
                   Run("_random_randint", {}, {{"low", "3"}, {"high", "3"}, {"shape", "(2,)"}});
                 }),
                 "_random_randint: low (3) must be less than high (3)"));
  CHECK(Contains(ErrorOf([] {
                   Run("_random_randint", {},
                       {{"low", "0"}, {"high", "4"}, {"shape", "(2,)"}, {"dtype", "float32"}});
                 }),
                 "_random_randint: dtype float32 is not supported (expected int32 or int64)"));
  CHECK(Contains(
      ErrorOf([] {
        Run("_random_randint", {}, {{"low", "0"}, {"high", "10000000000"}, {"shape", "(2,)"}});
      }),
      "does not fit in int32"));
  CHECK(Contains(ErrorOf([] {
                   Run("_random_randint", {}, {{"high", "3"}, {"shape", "(2,)"}});
                 }),
                 "_random_randint: required parameter 'low' is missing"));
  CHECK(Contains(ErrorOf([] { Run("_random_uniform", {}); }),
                 "_random_uniform: cannot infer the output shape"));
}

TEST_CASE("shuffle permutes the first axis, rows intact, reproducibly") {
  // Row r holds 10 r, 10 r + 1, 10 r + 2.
  std::vector<double> values;
  for (int r = 0; r < 50; ++r)
    for (int c = 0; c < 3; ++c) values.push_back(10 * r + c);
  for (DType t :
       {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64, DType::kFloat16}) {
    INFO(DTypeName(t));
    NDArray x = Array({50, 3}, values, t);
    Seed(3);
    const std::vector<double> y = Run("_shuffle", {x}).ToVector();
    std::multiset<double> rows;
    for (int r = 0; r < 50; ++r) {
      CHECK(y[3 * r + 1] == y[3 * r] + 1);
      CHECK(y[3 * r + 2] == y[3 * r] + 2);
      rows.insert(y[3 * r]);
    }
    std::multiset<double> expected;
    for (int r = 0; r < 50; ++r) expected.insert(10 * r);
    CHECK(rows == expected);
    CHECK(y != values);
    Seed(3);
    CHECK(Run("shuffle", {x}).ToVector() == y);
  }
  // 1-D: elements are rows.
  Seed(4);
  std::vector<double> v =
      Run("_shuffle", {Array({6}, {0, 1, 2, 3, 4, 5}, DType::kUint8)}).ToVector();
  std::sort(v.begin(), v.end());
  CHECK(v == std::vector<double>{0, 1, 2, 3, 4, 5});
  CheckClose(Run("_shuffle", {Array({1, 2}, {7, 8})}), {7, 8});
}

TEST_CASE("shuffle honours add, in place and views") {
  NDArray x = Array({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  Seed(11);
  const std::vector<double> shuffled = Run("_shuffle", {x}).ToVector();
  // kAddTo: out += shuffled rows.
  NDArray acc = Array({4, 2}, Repeat(100, 8));
  std::vector<NDArray> outs{acc};
  InvokeOptions add;
  add.req = {kAddTo};
  Seed(11);
  Invoke(MakeAttrs("_shuffle"), {x}, &outs, add);
  std::vector<double> expected = shuffled;
  for (double& e : expected) e += 100;
  CheckClose(acc, expected);
  // The input as the output: the same permutation, applied in place.
  std::vector<NDArray> self{x};
  Seed(11);
  Invoke(MakeAttrs("_shuffle"), {x}, &self);
  CheckClose(x, shuffled);
  // A view of rows 1..3 of a bigger array shuffles only those rows.
  NDArray base = Array({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  NDArray view = base.Slice(1, 4);
  std::vector<NDArray> vout{view};
  Seed(12);
  Invoke(MakeAttrs("_shuffle"), {view}, &vout);
  const std::vector<double> b = base.ToVector();
  CHECK(b[0] == 0);
  CHECK(b[1] == 1);
  std::multiset<double> firsts{b[2], b[4], b[6]};
  CHECK(firsts == std::multiset<double>{10, 20, 30});
}
