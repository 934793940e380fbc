// softmax, log_softmax, softmin: values, axes, temperature, stability,
// dtypes, requests, views, gradients and errors.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <utility>

#include "engine/ndarray/imperative.h"
#include "tests/cpp/op_test_util.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using tessera::test::Array;
using tessera::test::CheckClose;
using tessera::test::CheckNumericGradient;
using tessera::test::Contains;
using tessera::test::ErrorOf;
using tessera::test::RandomArray;
using tessera::test::Run;

namespace {

// softmax of x seen as (outer, len, inner) along the middle axis, by the formula.
std::vector<double> NaiveSoftmax(const std::vector<double>& x, int64_t outer, int64_t len,
                                 int64_t inner, bool log) {
  std::vector<double> y(x.size());
  for (int64_t m = 0; m < outer; ++m)
    for (int64_t n = 0; n < inner; ++n) {
      auto at = [&](int64_t k) { return static_cast<size_t>((m * len + k) * inner + n); };
      double mx = x[at(0)], sum = 0;
      for (int64_t k = 1; k < len; ++k) mx = std::max(mx, x[at(k)]);
      for (int64_t k = 0; k < len; ++k) sum += std::exp(x[at(k)] - mx);
      for (int64_t k = 0; k < len; ++k)
        y[at(k)] = log ? x[at(k)] - mx - std::log(sum) : std::exp(x[at(k)] - mx) / sum;
    }
  return y;
}

}  // namespace

TEST_CASE("softmax, log_softmax and softmin values") {
  NDArray x = Array({3}, {1, 2, 3});
  CheckClose(Run("softmax", {x}), {0.09003057317038046, 0.24472847105479764, 0.6652409557748218});
  CheckClose(Run("log_softmax", {x}),
             {-2.40760596444438, -1.4076059644443804, -0.40760596444438046});
  CheckClose(Run("softmin", {x}), {0.6652409557748218, 0.24472847105479764, 0.09003057317038046});
  // temperature 2: softmax([0.5, 1, 1.5]).
  CheckClose(Run("softmax", {x}, {{"temperature", "2"}}),
             {0.1863237232258476, 0.3071958857184984, 0.506480391055654});
  CheckClose(Run("log_softmax", {x}, {{"temperature", "2"}}),
             {-1.6802696706417346, -1.1802696706417346, -0.6802696706417346});
  // Rows along the last axis, columns along axis 0.
  NDArray m = Array({2, 2}, {1, 2, 3, 4});
  CheckClose(Run("softmax", {m}, {{"axis", "0"}}),
             {0.11920292202211755, 0.11920292202211755, 0.8807970779778823, 0.8807970779778823});
  CheckClose(Run("softmax", {Array({2, 3}, {1, 1, 1, 0, 0, 0})}),
             {1 / 3.0, 1 / 3.0, 1 / 3.0, 1 / 3.0, 1 / 3.0, 1 / 3.0});
}

TEST_CASE("softmax is numerically stable for large and very negative inputs") {
  CheckClose(Run("softmax", {Array({3}, {1000, 1001, 1002})}),
             {0.09003057317038046, 0.24472847105479764, 0.6652409557748218});
  CheckClose(Run("softmax", {Array({3}, {-1000, -1001, -1002}, DType::kFloat32)}),
             {0.6652409557748218, 0.24472847105479764, 0.09003057317038046});
  CheckClose(Run("log_softmax", {Array({2}, {-1000, 0})}), {-1000, 0});
  CheckClose(Run("log_softmax", {Array({2}, {50, 50}, DType::kFloat16)}), {-0.693147, -0.693147},
             1e-3);
}

TEST_CASE("softmax matches the formula on contiguous and strided axes") {
  NDArray a = RandomArray({64, 700}, -5, 5);
  CheckClose(Run("softmax", {a}), NaiveSoftmax(a.ToVector(), 64, 700, 1, false), 1e-10, 1e-14);
  NDArray b = RandomArray({6, 300, 7}, -5, 5);
  CheckClose(Run("log_softmax", {b}, {{"axis", "1"}}), NaiveSoftmax(b.ToVector(), 6, 300, 7, true),
             1e-10, 1e-12);
  CheckClose(Run("softmax", {b}, {{"axis", "-3"}}), NaiveSoftmax(b.ToVector(), 1, 6, 2100, false),
             1e-10, 1e-14);
  NDArray f = a.AsType(DType::kFloat32);
  CheckClose(Run("softmax", {f}), NaiveSoftmax(f.ToVector(), 64, 700, 1, false), 1e-5, 1e-8);
}

TEST_CASE("float32 softmax at oneDNN's sizes matches the float64 loops, in place too") {
  // Above kDnnlSoftmaxMinElements float32 runs on oneDNN; float64 on the loops.
  for (auto [shape, axis] : {std::pair<Shape, int>{Shape{64, 1000}, -1},
                             {Shape{8, 300, 20}, 1},
                             {Shape{40, 30, 40}, 0}}) {
    CAPTURE(shape);
    NDArray x = RandomArray(shape, -8, 8);
    NDArray g = RandomArray(shape, -1, 1);
    const op::ParamDict p{{"axis", std::to_string(axis)}};
    for (const char* name : {"softmax", "log_softmax"}) {
      CAPTURE(name);
      const std::string bwd = std::string("_backward_") + name;
      NDArray y64 = Run(name, {x}, p);
      NDArray y32 = Run(name, {x.AsType(DType::kFloat32)}, p);
      CheckClose(y32, y64.ToVector(), 1e-5, 1e-6);
      NDArray gx64 = Run(bwd, {g, y64}, p);
      NDArray gx32 = Run(bwd, {g.AsType(DType::kFloat32), y32}, p);
      CheckClose(gx32, gx64.ToVector(), 1e-4, 1e-6);
      NDArray self = x.AsType(DType::kFloat32);
      std::vector<NDArray> outs{self};
      Invoke(MakeAttrs(name, p), {self}, &outs);
      CheckClose(self, y64.ToVector(), 1e-5, 1e-6);
    }
  }
}

TEST_CASE("float dtypes and the dtype parameter") {
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    INFO(DTypeName(t));
    NDArray y = Run("softmax", {Array({3}, {1, 2, 3}, t)});
    CHECK(y.dtype() == t);
    CheckClose(y, {0.09003057317038046, 0.24472847105479764, 0.6652409557748218}, 1e-2);
    CHECK(Run("log_softmax", {Array({3}, {1, 2, 3}, t)}).dtype() == t);
  }
  NDArray y = Run("softmax", {Array({3}, {1, 2, 3}, DType::kFloat16)}, {{"dtype", "float32"}});
  CHECK(y.dtype() == DType::kFloat32);
  CheckClose(y, {0.09003057317038046, 0.24472847105479764, 0.6652409557748218}, 1e-6);
  CheckClose(Run("softmax", {Array({2}, {0, 0})}, {{"use_length", "False"}}), {0.5, 0.5});
}

TEST_CASE("softmax honours add and in-place requests and reads views") {
  NDArray x = Array({2}, {0, 0});
  NDArray out = Array({2}, {1, 2});
  std::vector<NDArray> outs{out};
  InvokeOptions add;
  add.req = {kAddTo};
  Invoke(MakeAttrs("softmax"), {x}, &outs, add);
  CheckClose(out, {1.5, 2.5});
  NDArray z = Array({3}, {1, 2, 3});
  std::vector<NDArray> self{z};
  Invoke(MakeAttrs("log_softmax"), {z}, &self);
  CheckClose(z, {-2.40760596444438, -1.4076059644443804, -0.40760596444438046});
  NDArray base = Array({3, 2}, {9, 9, 1, 3, 9, 9});
  CheckClose(Run("softmax", {base.Slice(1, 2)}), {0.11920292202211755, 0.8807970779778823});
  // Writing into a view leaves the rest of the array alone.
  std::vector<NDArray> into{base.At(2)};
  Invoke(MakeAttrs("softmax"), {Array({2}, {1, 3})}, &into);
  CheckClose(base, {9, 9, 1, 3, 0.11920292202211755, 0.8807970779778823});
}

TEST_CASE("softmax gradients match finite differences") {
  NDArray x = RandomArray({2, 3, 4}, -2, 2);
  CHECK(CheckNumericGradient("softmax", {}, {x}));
  CHECK(CheckNumericGradient("softmax", {{"axis", "1"}}, {x}));
  CHECK(CheckNumericGradient("softmax", {{"axis", "0"}, {"temperature", "0.7"}}, {x}));
  CHECK(CheckNumericGradient("log_softmax", {}, {x}));
  CHECK(CheckNumericGradient("log_softmax", {{"axis", "-2"}, {"temperature", "1.5"}}, {x}));
  CHECK(CheckNumericGradient("softmin", {{"axis", "2"}}, {x}));
  CHECK(CheckNumericGradient("softmax", {{"dtype", "float64"}}, {x}));
  // Backward with add and in place (the gradient may overwrite ograd).
  NDArray y = Run("softmax", {Array({2}, {0, 0})});
  NDArray g = Array({2}, {1, 0});
  NDArray gx = Array({2}, {1, 1});
  std::vector<NDArray> outs{gx};
  InvokeOptions add;
  add.req = {kAddTo};
  Invoke(MakeAttrs("_backward_softmax"), {g, y}, &outs, add);
  CheckClose(gx, {1.25, 0.75});  // y (g - y.g) = 0.5 * (1 - 0.5), 0.5 * (0 - 0.5)
  std::vector<NDArray> self{g};
  Invoke(MakeAttrs("_backward_softmax"), {g, y}, &self);
  CheckClose(g, {0.25, -0.25});
}

TEST_CASE("softmax errors name the op, the argument and the shape") {
  NDArray x = Array({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(Contains(ErrorOf([&] {
                   Run("softmax", {x}, {{"axis", "2"}});
                 }),
                 "softmax on input of shape (2,3): axis 2 is out of range"));
  CHECK(Contains(ErrorOf([&] {
                   Run("log_softmax", {x}, {{"axis", "-3"}});
                 }),
                 "log_softmax on input of shape (2,3): axis -3 is out of range"));
  CHECK(Contains(ErrorOf([&] { Run("softmax", {x.AsType(DType::kInt32)}); }),
                 "softmax: input 0 has dtype int32, supported: float16"));
  CHECK(Contains(ErrorOf([&] {
                   Run("softmax", {x}, {{"dtype", "int8"}});
                 }),
                 "softmax: dtype has dtype int8"));
  CHECK(Contains(ErrorOf([&] {
                   Run("softmax", {x}, {{"temperature", "0"}});
                 }),
                 "softmax: temperature must be nonzero"));
  CHECK(Contains(ErrorOf([&] {
                   Run("softmax", {x}, {{"use_length", "True"}});
                 }),
                 "softmax: use_length=True (masking by a length input) is not supported"));
  CHECK(Contains(ErrorOf([&] {
                   Run("softmax", {x}, {{"axis", "x"}});
                 }),
                 "softmax: parameter 'axis' got 'x', expected int"));
}
