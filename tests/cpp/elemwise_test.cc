// Elementwise operators: unary, same-shape binary, broadcasting binary and
// scalar forms. Expected values are literals (computed with Python's math
// module) or naive per-element loops written here; gradients are checked
// against finite differences.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "engine/ndarray/imperative.h"
#include "engine/op/infer_utils.h"
#include "engine/op/op_attr_types.h"
#include "ops/tensor/elemwise_math.h"
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

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const DType kFloatTypes[] = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};

double RelTol(DType t) {
  switch (t) {
    case DType::kFloat64:
      return 1e-12;
    case DType::kFloat32:
      return 1e-5;
    case DType::kFloat16:
      return 5e-3;
    default:
      return 3e-2;  // bfloat16: 8 bits of mantissa, input and output rounded
  }
}

NDArray Scalar1(const char* op, const NDArray& x, double s) {
  return Run(op, {x}, {{"scalar", std::to_string(s)}});
}

// Naive NumPy broadcasting: the value of `a` at output coordinate `idx`.
double At(const NDArray& a, const std::vector<double>& v, const Shape& out, int64_t flat) {
  const int nd = out.ndim(), off = nd - a.ndim();
  std::vector<int64_t> idx(nd);
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = flat % out[d];
    flat /= out[d];
  }
  int64_t pos = 0;
  for (int d = 0; d < a.ndim(); ++d)
    pos = pos * a.shape()[d] + (a.shape()[d] == 1 ? 0 : idx[d + off]);
  return v[pos];
}

template <typename F>
std::vector<double> NaiveBroadcast(const NDArray& a, const NDArray& b, const Shape& out, F f) {
  const std::vector<double> av = a.ToVector(), bv = b.ToVector();
  std::vector<double> r(static_cast<size_t>(out.Size()));
  for (int64_t i = 0; i < out.Size(); ++i) r[i] = f(At(a, av, out, i), At(b, bv, out, i));
  return r;
}

}  // namespace

// ---------------------------------------------------------------- unary

TEST_CASE("unary ops match math-library values on every float dtype") {
  struct Case {
    const char* op;
    std::vector<double> x, y;
  };
  const std::vector<Case> cases = {
      {"abs", {-2.5, 0.0, 3.25}, {2.5, 0.0, 3.25}},
      {"negative", {-2.5, 0.0, 3.25}, {2.5, -0.0, -3.25}},
      {"reciprocal", {-2.0, 0.5, 4.0}, {-0.5, 2.0, 0.25}},
      {"square", {-1.5, 0.0, 3.0}, {2.25, 0.0, 9.0}},
      {"sqrt", {0.25, 2.0, 9.0}, {0.5, 1.4142135623730951, 3.0}},
      {"rsqrt", {0.25, 2.0, 9.0}, {2.0, 0.7071067811865475, 0.3333333333333333}},
      {"cbrt", {-8.0, 0.5, 27.0}, {-2.0, 0.7937005259840998, 3.0}},
      {"exp", {-1.0, 0.0, 2.5}, {0.36787944117144233, 1.0, 12.182493960703473}},
      {"expm1",
       {-1.0, 1e-05, 2.5},
       {-0.6321205588285577, 1.0000050000166668e-05, 11.182493960703473}},
      {"log", {0.5, 1.0, 10.0}, {-0.6931471805599453, 0.0, 2.302585092994046}},
      {"log1p",
       {-0.5, 1e-05, 10.0},
       {-0.6931471805599453, 9.999950000333332e-06, 2.3978952727983707}},
      {"log2", {0.5, 3.0, 1024.0}, {-1.0, 1.584962500721156, 10.0}},
      {"log10", {0.5, 3.0, 1000.0}, {-0.3010299956639812, 0.47712125471966244, 3.0}},
      {"sin", {-1.0, 0.5, 3.0}, {-0.8414709848078965, 0.479425538604203, 0.1411200080598672}},
      {"cos", {-1.0, 0.5, 3.0}, {0.5403023058681398, 0.8775825618903728, -0.9899924966004454}},
      {"tan", {-1.0, 0.5, 1.2}, {-1.5574077246549023, 0.5463024898437905, 2.5721516221263188}},
      {"arcsin", {-0.9, 0.1, 0.5}, {-1.1197695149986342, 0.1001674211615598, 0.5235987755982989}},
      {"arccos", {-0.9, 0.1, 0.5}, {2.6905658417935308, 1.4706289056333368, 1.0471975511965979}},
      {"arctan", {-3.0, 0.1, 0.5}, {-1.2490457723982544, 0.09966865249116204, 0.4636476090008061}},
      {"sinh", {-2.0, 0.1, 1.5}, {-3.626860407847019, 0.10016675001984403, 2.1292794550948173}},
      {"cosh", {-2.0, 0.1, 1.5}, {3.7621956910836314, 1.0050041680558035, 2.352409615243247}},
      {"tanh", {-2.0, 0.1, 1.5}, {-0.9640275800758169, 0.09966799462495582, 0.9051482536448664}},
      {"arcsinh", {-2.0, 0.1, 1.5}, {-1.4436354751788103, 0.09983407889920758, 1.1947632172871094}},
      {"arccosh", {1.0, 1.5, 10.0}, {0.0, 0.9624236501192069, 2.993222846126381}},
      {"arctanh", {-0.9, 0.1, 0.5}, {-1.4722194895832204, 0.10033534773107558, 0.5493061443340548}},
      {"sigmoid", {-2.0, 0.0, 3.0}, {0.11920292202211755, 0.5, 0.9525741268224334}},
      {"relu", {-2.0, 0.0, 3.0}, {0.0, 0.0, 3.0}},
      {"softsign", {-2.0, 0.0, 3.0}, {-0.6666666666666666, 0.0, 0.75}},
      {"erf", {-1.0, 0.25, 2.0}, {-0.8427007929497149, 0.2763263901682369, 0.9953222650189527}},
      {"gamma", {0.5, 3.0, 4.5}, {1.7724538509055159, 2.0, 11.631728396567446}},
      {"gammaln", {0.5, 3.0, 10.5}, {0.5723649429247004, 0.693147180559945, 13.940625219403763}},
      {"floor", {-2.5, -0.5, 1.5}, {-3.0, -1.0, 1.0}},
      {"ceil", {-2.5, -0.5, 1.5}, {-2.0, 0.0, 2.0}},
      {"round", {-2.5, 0.5, 1.4}, {-3.0, 1.0, 1.0}},
      {"rint", {-2.5, 0.5, 1.5}, {-3.0, 0.0, 1.0}},  // ties to the floor (MXNet)
      {"trunc", {-2.7, -0.5, 1.7}, {-2.0, 0.0, 1.0}},
      {"fix", {-2.7, -0.5, 1.7}, {-2.0, 0.0, 1.0}},
      {"sign", {-2.5, 0.0, 3.0}, {-1.0, 0.0, 1.0}},
      {"identity", {-2.5, 0.0, 3.0}, {-2.5, 0.0, 3.0}},
      {"_copy", {-2.5, 0.0, 3.0}, {-2.5, 0.0, 3.0}},
      {"logical_not", {-2.5, 0.0, 3.0}, {0.0, 1.0, 0.0}},
  };
  for (const Case& c : cases) {
    for (DType t : kFloatTypes) {
      INFO(c.op << " on " << DTypeName(t));
      NDArray y = Run(c.op, {Array({3}, c.x, t)});
      CHECK(y.dtype() == t);
      CHECK(y.shape() == Shape{3});
      CheckClose(y, c.y, RelTol(t), t == DType::kFloat64 ? 1e-14 : 1e-3);
    }
  }
  // clip, the one unary op with parameters.
  CheckClose(Run("clip", {Array({4}, {-2, 0.25, 0.5, 3})}, {{"a_min", "0"}, {"a_max", "0.5"}}),
             {0, 0.25, 0.5, 0.5});
  // NaN: sign keeps it, sqrt of a negative makes it, log(0) is -inf.
  CheckClose(Run("sign", {Array({1}, {kNaN})}), {kNaN});
  CheckClose(Run("sqrt", {Array({1}, {-1})}), {kNaN});
  CheckClose(Run("log", {Array({1}, {0})}), {-std::numeric_limits<double>::infinity()});
}

TEST_CASE("the vectorised float tanh is within 3 ulp of the true value") {
  // A sweep over [-12, 12] with every float near 0 and near the switch at
  // 0.55, against tanh in double rounded to float.
  std::vector<float> xs;
  for (float x = -12.f; x <= 12.f; x += 1.0e-4f) xs.push_back(x);
  for (float x = 0.54f; x < 0.56f; x = std::nextafter(x, 1.f)) xs.push_back(x);
  for (float x = 1e-30f; x < 1e-3f; x *= 1.01f) xs.push_back(x), xs.push_back(-x);
  double worst = 0;
  float worst_x = 0;
  for (float x : xs) {
    const float want = static_cast<float>(std::tanh(static_cast<double>(x)));
    const double ulp = std::nextafter(std::fabs(want), 2.f) - std::fabs(want);
    const double err = std::fabs(double(op::math::tanh(x)) - std::tanh(double(x))) / ulp;
    if (err > worst) worst = err, worst_x = x;
  }
  CAPTURE(worst_x);
  CHECK(worst <= 3.0);
  CHECK(op::math::tanh(0.f) == 0.f);
  CHECK(std::signbit(op::math::tanh(-0.f)));
  CHECK(op::math::tanh(std::numeric_limits<float>::infinity()) == 1.f);
  CHECK(op::math::tanh(-std::numeric_limits<float>::infinity()) == -1.f);
  CHECK(op::math::tanh(1e6f) == 1.f);
  CHECK(std::isnan(op::math::tanh(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("integer-capable unary ops work on integer and bool arrays") {
  for (DType t : {DType::kInt32, DType::kInt64, DType::kInt8}) {
    INFO(DTypeName(t));
    NDArray x = Array({3}, {-3, 0, 4}, t);
    CheckClose(Run("abs", {x}), {3, 0, 4});
    CheckClose(Run("sign", {x}), {-1, 0, 1});
    CheckClose(Run("negative", {x}), {3, 0, -4});
    CheckClose(Run("square", {x}), {9, 0, 16});
    CheckClose(Run("relu", {x}), {0, 0, 4});
    CheckClose(Run("floor", {x}), {-3, 0, 4});
    CheckClose(Run("rint", {x}), {-3, 0, 4});
    CheckClose(Run("identity", {x}), {-3, 0, 4});
    CheckClose(Run("logical_not", {x}), {0, 1, 0});
    CheckClose(Run("clip", {x}, {{"a_min", "-1"}, {"a_max", "2"}}), {-1, 0, 2});
    CHECK(Run("abs", {x}).dtype() == t);
  }
  NDArray u = Array({3}, {0, 1, 200}, DType::kUint8);
  CheckClose(Run("abs", {u}), {0, 1, 200});
  CheckClose(Run("sign", {u}), {0, 1, 1});
  CheckClose(Run("negative", {u}), {0, 255, 56});  // unsigned wraps around
  NDArray b = Array({2}, {0, 1}, DType::kBool);
  CheckClose(Run("logical_not", {b}), {1, 0});
  CheckClose(Run("identity", {b}), {0, 1});
  CHECK(Run("logical_not", {b}).dtype() == DType::kBool);
}

TEST_CASE("transcendental unary ops reject integer dtypes at the call") {
  NDArray i = Array({2}, {1, 2}, DType::kInt32);
  for (const char* op :
       {"exp", "log", "sqrt", "sin", "tanh", "sigmoid", "erf", "gamma", "reciprocal"}) {
    INFO(op);
    const std::string err = ErrorOf([&] { Invoke(op, {i}); });
    CHECK(Contains(err, std::string(op) + ": dtype int32 is not supported"));
    CHECK(Contains(err, "float16, bfloat16, float32, float64"));
  }
  CHECK(Contains(ErrorOf([&] { Invoke("abs", {Array({1}, {1}, DType::kBool)}); }),
                 "abs: dtype bool is not supported"));
}

TEST_CASE("clip parameters are checked") {
  NDArray x = Array({2}, {1, 2});
  CHECK(Contains(ErrorOf([&] {
                   Invoke("clip", {x}, {{"a_min", "0"}});
                 }),
                 "clip: required parameter 'a_max' is missing"));
  CHECK(Contains(ErrorOf([&] {
                   Invoke("clip", {x}, {{"a_min", "3"}, {"a_max", "1"}});
                 }),
                 "clip: parameter 'a_min' (3) must not exceed 'a_max' (1)"));
  CHECK(Contains(ErrorOf([&] {
                   Invoke("clip", {x}, {{"a_min", "x"}, {"a_max", "1"}});
                 }),
                 "clip: parameter 'a_min' got 'x'"));
  CHECK(Contains(ErrorOf([&] {
                   Invoke("exp", {x}, {{"scalar", "1"}});
                 }),
                 "exp: unknown parameter 'scalar'"));
}

TEST_CASE("unary gradients match finite differences") {
  struct Case {
    const char* op;
    double lo, hi;
  };
  const std::vector<Case> smooth = {
      {"negative", -2, 2},     {"square", -2, 2},      {"identity", -2, 2},
      {"reciprocal", 0.5, 2},  {"sqrt", 0.5, 2},       {"rsqrt", 0.5, 2},
      {"cbrt", 0.5, 2},        {"exp", -1, 1},         {"expm1", -1, 1},
      {"log", 0.5, 2},         {"log1p", -0.5, 1},     {"log2", 0.5, 2},
      {"log10", 0.5, 2},       {"sin", -1, 1},         {"cos", -1, 1},
      {"tan", -1, 1},          {"arcsin", -0.7, 0.7},  {"arccos", -0.7, 0.7},
      {"arctan", -1.5, 1.5},   {"sinh", -1.5, 1.5},    {"cosh", -1.5, 1.5},
      {"tanh", -1.5, 1.5},     {"arcsinh", -1.5, 1.5}, {"arccosh", 1.5, 3},
      {"arctanh", -0.7, 0.7},  {"sigmoid", -2, 2},     {"softsign", -2, 2},
      {"erf", -1.5, 1.5},      {"gamma", 0.5, 3},      {"gammaln", 0.5, 3},
      {"logical_not", 0.5, 2},
  };
  for (const Case& c : smooth) {
    INFO(c.op);
    CHECK(CheckNumericGradient(c.op, {}, {RandomArray({2, 3}, c.lo, c.hi)}));
  }
  // Piecewise ops, away from their kinks and jumps.
  const NDArray kinked = Array({4}, {-1.3, -0.2, 0.3, 1.7}, DType::kFloat64);
  for (const char* op : {"abs", "relu", "sign", "floor", "ceil", "round", "rint", "trunc", "fix"}) {
    INFO(op);
    CHECK(CheckNumericGradient(op, {}, {kinked}));
  }
  CHECK(CheckNumericGradient("clip", {{"a_min", "-0.5"}, {"a_max", "0.5"}},
                             {Array({4}, {-1.2, -0.3, 0.2, 0.9}, DType::kFloat64)}));
}

// ---------------------------------------------------------------- binary, same shape

TEST_CASE("same-shape binary ops and their MXNet aliases") {
  for (DType t : kFloatTypes) {
    INFO(DTypeName(t));
    NDArray a = Array({2, 2}, {1, 2, 3, 4}, t), b = Array({2, 2}, {4, -2, 0.5, 8}, t);
    CheckClose(Run("elemwise_add", {a, b}), {5, 0, 3.5, 12});
    CheckClose(Run("elemwise_sub", {a, b}), {-3, 4, 2.5, -4});
    CheckClose(Run("elemwise_mul", {a, b}), {4, -4, 1.5, 32});
    CheckClose(Run("elemwise_div", {a, b}), {0.25, -1, 6, 0.5});
    CHECK(Run("elemwise_add", {a, b}).dtype() == t);
  }
  NDArray a = Array({3}, {7, -7, 5}, DType::kInt32), b = Array({3}, {2, 2, 0}, DType::kInt32);
  CheckClose(Run("elemwise_div", {a, b}), {3, -3, 0});  // truncation; x / 0 = 0
  CheckClose(Run("elemwise_mul", {a, b}), {14, -14, 0});
  for (const char* alias : {"_plus", "_Plus", "_add"})
    CHECK(op::Op::Get(alias) == op::Op::Get("elemwise_add"));
  for (const char* alias : {"_minus", "_Minus", "_sub"})
    CHECK(op::Op::Get(alias) == op::Op::Get("elemwise_sub"));
  for (const char* alias : {"_mul", "_Mul"})
    CHECK(op::Op::Get(alias) == op::Op::Get("elemwise_mul"));
  for (const char* alias : {"_div", "_Div"})
    CHECK(op::Op::Get(alias) == op::Op::Get("elemwise_div"));
  CHECK(op::Op::Get("_copy") == op::Op::Get("identity"));
}

TEST_CASE("same-shape binary ops reject different shapes and dtypes") {
  NDArray a = Array({2, 3}, {1, 2, 3, 4, 5, 6}), b = Array({3, 2}, {1, 2, 3, 4, 5, 6});
  const std::string err = ErrorOf([&] { Invoke("elemwise_add", {a, b}); });
  CHECK(Contains(err, "elemwise_add"));
  CHECK(Contains(err, "(3,2)"));
  CHECK(Contains(err, "(2,3)"));
  NDArray d = Array({2, 3}, {1, 2, 3, 4, 5, 6}, DType::kFloat64);
  CHECK(Contains(ErrorOf([&] {
                   Invoke("elemwise_mul", {a, d});
                 }),
                 "elemwise_mul: input 1 has dtype float64 but an earlier argument is float32"));
  CHECK(Contains(ErrorOf([&] { Invoke("elemwise_add", {a}); }),
                 "elemwise_add: takes 2 inputs, got 1"));
}

TEST_CASE("same-shape binary gradients match finite differences") {
  const NDArray a = RandomArray({2, 3}, -2, 2, DType::kFloat64, 3);
  const NDArray b = RandomArray({2, 3}, 0.5, 2, DType::kFloat64, 4);
  for (const char* op : {"elemwise_add", "elemwise_sub", "elemwise_mul", "elemwise_div"}) {
    INFO(op);
    CHECK(CheckNumericGradient(op, {}, {a, b}));
  }
}

// ---------------------------------------------------------------- broadcasting

TEST_CASE("broadcast ops follow NumPy's broadcasting rules") {
  NDArray a = Array({2, 3}, {1, 2, 3, 4, 5, 6}), row = Array({3}, {10, 20, 30});
  CheckClose(Run("broadcast_add", {a, row}), {11, 22, 33, 14, 25, 36});
  CHECK(Run("broadcast_add", {a, row}).shape() == Shape{2, 3});
  NDArray col = Array({2, 1}, {1, 2}), r13 = Array({1, 3}, {10, 20, 30});
  NDArray outer = Run("broadcast_mul", {col, r13});
  CHECK(outer.shape() == Shape{2, 3});
  CheckClose(outer, {10, 20, 30, 20, 40, 60});
  // Scalar-like operands on either side, and the same shape.
  NDArray five = Array({1}, {5});
  CheckClose(Run("broadcast_sub", {five, a}), {4, 3, 2, 1, 0, -1});
  CheckClose(Run("broadcast_sub", {a, five}), {-4, -3, -2, -1, 0, 1});
  CheckClose(Run("broadcast_div", {a, a}), {1, 1, 1, 1, 1, 1});
  // Rank differences and stretches on both sides, against a naive loop.
  struct Shapes {
    Shape l, r, out;
  };
  const std::vector<Shapes> shapes = {
      {{4, 1, 3}, {2, 1}, {4, 2, 3}},
      {{2, 3, 4}, {2, 1, 4}, {2, 3, 4}},
      {{1, 3, 1, 5}, {2, 1, 4, 1}, {2, 3, 4, 5}},
      {{5, 1, 1, 2}, {5, 3, 4, 2}, {5, 3, 4, 2}},
      {{1}, {1, 1}, {1, 1}},
      {{300, 200}, {200}, {300, 200}},
      {{300, 1}, {300, 200}, {300, 200}},
      {{1, 200}, {300, 1}, {300, 200}},
  };
  for (const Shapes& s : shapes) {
    INFO(s.l << " and " << s.r);
    NDArray l = RandomArray(s.l, -3, 3, DType::kFloat32, 11);
    NDArray r = RandomArray(s.r, -3, 3, DType::kFloat32, 12);
    NDArray out = Run("broadcast_sub", {l, r});
    CHECK(out.shape() == s.out);
    CheckClose(out, NaiveBroadcast(l, r, s.out, [](double x, double y) { return x - y; }));
    CheckClose(Run("maximum", {l, r}),
               NaiveBroadcast(l, r, s.out, [](double x, double y) { return std::max(x, y); }));
  }
}

TEST_CASE("broadcast shape errors name the op and both shapes") {
  NDArray a = Array({2, 3}, {1, 2, 3, 4, 5, 6}), b = Array({4, 3}, std::vector<double>(12, 1));
  const std::string err = ErrorOf([&] { Invoke("broadcast_add", {a, b}); });
  CHECK(Contains(
      err, "broadcast_add: operands could not be broadcast together with shapes (2,3) and (4,3)"));
  CHECK(Contains(
      ErrorOf([&] {
        Invoke("multiply", {Array({3}, {1, 2, 3}), Array({2}, {1, 2})});
      }),
      "broadcast_mul: operands could not be broadcast together with shapes (3,) and (2,)"));
  // A given output of the wrong shape.
  std::vector<NDArray> outs{Array({3}, {0, 0, 0})};
  CHECK(Contains(ErrorOf([&] {
                   Invoke(MakeAttrs("broadcast_add"), {a, Array({3}, {1, 2, 3})}, &outs);
                 }),
                 "broadcast_add"));
  CHECK(Contains(
      ErrorOf([&] {
        Invoke("broadcast_hypot", {Array({1}, {1}, DType::kInt32), Array({1}, {1}, DType::kInt32)});
      }),
      "broadcast_hypot: dtype int32 is not supported"));
}

TEST_CASE("broadcast shape inference fills unknowns both ways") {
  const op::Op* add = op::Op::Get("broadcast_add");
  auto infer = op::Op::GetAttr<op::FInferShape>("FInferShape")[add];
  op::NodeAttrs attrs;
  attrs.op = add;
  std::vector<Shape> in = {Shape{2, 0}, Shape{1, 3}}, out = {Shape()};
  CHECK(infer(attrs, &in, &out));
  CHECK(out[0] == Shape({2, 3}));
  in = {Shape(), Shape{3}};
  out = {Shape()};
  CHECK_FALSE(infer(attrs, &in, &out));

  const op::Op* grad = op::Op::Get("_backward_broadcast_mul");
  auto ginfer = op::Op::GetAttr<op::FInferShape>("FInferShape")[grad];
  attrs.op = grad;
  in = {Shape(), Shape(), Shape{3}};
  out = {Shape{2, 3}, Shape()};
  CHECK(ginfer(attrs, &in, &out));
  CHECK(in[0] == Shape({2, 3}));
  CHECK(in[1] == Shape({2, 3}));
  CHECK(out[1] == Shape({3}));

  // Same-shape ops infer an input from the other input or the output.
  const op::Op* eadd = op::Op::Get("elemwise_add");
  attrs.op = eadd;
  in = {Shape(), Shape()};
  out = {Shape{4, 5}};
  CHECK(op::Op::GetAttr<op::FInferShape>("FInferShape")[eadd](attrs, &in, &out));
  CHECK(in[0] == Shape({4, 5}));
  CHECK(in[1] == Shape({4, 5}));
}

TEST_CASE("mod, division and power: sign rules and integer edge cases") {
  NDArray a = Array({4}, {-7, 7, -7, 7}), b = Array({4}, {3, 3, -3, -3});
  CheckClose(Run("broadcast_mod", {a, b}), {2, 1, -1, -2});
  CheckClose(Run("broadcast_mod", {Array({2}, {5.5, -5.5}), Array({1}, {2})}), {1.5, 0.5});
  CheckClose(Run("mod", {Array({2}, {1, -2.5}), Array({1}, {0})}), {0, 0});  // MXNet's rule
  for (DType t : {DType::kInt32, DType::kInt64, DType::kInt8}) {
    INFO(DTypeName(t));
    CheckClose(Run("broadcast_mod", {a.AsType(t), b.AsType(t)}), {2, 1, -1, -2});
    CheckClose(Run("broadcast_mod", {Array({2}, {5, -5}, t), Array({1}, {0}, t)}), {0, 0});
    CheckClose(Run("broadcast_div", {Array({3}, {7, -7, 5}, t), Array({3}, {2, 2, 0}, t)}),
               {3, -3, 0});
    CheckClose(Run("broadcast_power",
                   {Array({6}, {2, 3, -2, 2, 1, -1}, t), Array({6}, {3, 2, 3, -1, -5, -3}, t)}),
               {8, 9, -8, 0, 1, -1});
  }
  // The most negative integer divided by -1 wraps instead of trapping.
  const double int_min = std::numeric_limits<int32_t>::min();
  NDArray m = Array({2}, {int_min, int_min}, DType::kInt32),
          neg = Array({2}, {-1, -1}, DType::kInt32);
  CheckClose(Run("broadcast_div", {m, neg}), {int_min, int_min});
  CheckClose(Run("broadcast_mod", {m, neg}), {0, 0});
  CheckClose(Run("elemwise_div", {m, neg}), {int_min, int_min});
  CheckClose(Run("power", {Array({2}, {2, 4}), Array({2}, {0.5, -1})}), {1.4142135623730951, 0.25});
  CheckClose(Run("broadcast_div", {Array({2}, {1, -1}), Array({1}, {0})}),
             {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()});
  NDArray u = Array({2}, {7, 200}, DType::kUint8);
  CheckClose(Run("broadcast_mod", {u, Array({1}, {3}, DType::kUint8)}), {1, 2});
}

TEST_CASE("maximum, minimum, hypot, comparisons and logic") {
  NDArray a = Array({3}, {1, kNaN, 5}), b = Array({3}, {2, 0, 3});
  CheckClose(Run("broadcast_maximum", {a, b}), {2, kNaN, 5});
  CheckClose(Run("broadcast_minimum", {a, b}), {1, kNaN, 3});
  CheckClose(Run("hypot", {Array({2}, {3, 5}), Array({2}, {4, 12})}), {5, 13});
  for (DType t : {DType::kFloat32, DType::kInt32, DType::kFloat16, DType::kUint8}) {
    INFO(DTypeName(t));
    NDArray x = Array({3}, {1, 2, 3}, t), two = Array({1}, {2}, t);
    NDArray eq = Run("broadcast_equal", {x, two});
    CHECK(eq.dtype() == t);
    CheckClose(eq, {0, 1, 0});
    CheckClose(Run("not_equal", {x, two}), {1, 0, 1});
    CheckClose(Run("greater", {x, two}), {0, 0, 1});
    CheckClose(Run("greater_equal", {x, two}), {0, 1, 1});
    CheckClose(Run("lesser", {x, two}), {1, 0, 0});
    CheckClose(Run("lesser_equal", {x, two}), {1, 1, 0});
  }
  NDArray p = Array({3}, {0, 1, 2}), q = Array({2, 1}, {0, 3});
  CheckClose(Run("logical_and", {p, q}), {0, 0, 0, 0, 1, 1});
  CheckClose(Run("logical_or", {p, q}), {0, 1, 1, 1, 1, 1});
  CheckClose(Run("logical_xor", {p, q}), {0, 1, 1, 1, 0, 0});
  NDArray t = Array({2}, {0, 1}, DType::kBool), f = Array({2}, {1, 1}, DType::kBool);
  NDArray both = Run("broadcast_logical_and", {t, f});
  CHECK(both.dtype() == DType::kBool);
  CheckClose(both, {0, 1});
  CheckClose(Run("broadcast_equal", {t, f}), {0, 1});
  CHECK(Contains(ErrorOf([&] {
                   Invoke("broadcast_add", {t, f});
                 }),
                 "broadcast_add: dtype bool is not supported"));
}

TEST_CASE("every NumPy-style name is an alias of its broadcast op") {
  const std::vector<std::pair<const char*, const char*>> aliases = {
      {"add", "broadcast_add"},
      {"broadcast_plus", "broadcast_add"},
      {"subtract", "broadcast_sub"},
      {"broadcast_minus", "broadcast_sub"},
      {"multiply", "broadcast_mul"},
      {"divide", "broadcast_div"},
      {"mod", "broadcast_mod"},
      {"power", "broadcast_power"},
      {"maximum", "broadcast_maximum"},
      {"minimum", "broadcast_minimum"},
      {"hypot", "broadcast_hypot"},
      {"equal", "broadcast_equal"},
      {"not_equal", "broadcast_not_equal"},
      {"greater", "broadcast_greater"},
      {"greater_equal", "broadcast_greater_equal"},
      {"lesser", "broadcast_lesser"},
      {"lesser_equal", "broadcast_lesser_equal"},
      {"logical_and", "broadcast_logical_and"},
      {"logical_or", "broadcast_logical_or"},
      {"logical_xor", "broadcast_logical_xor"},
  };
  for (auto [alias, name] : aliases) {
    INFO(alias);
    CHECK(op::Op::Get(alias) == op::Op::Get(name));
    CHECK_FALSE(op::Op::Get(name)->description().empty());
  }
}

TEST_CASE("broadcast gradients sum over the broadcast axes") {
  struct Case {
    const char* op;
    double alo, ahi, blo, bhi;
  };
  const std::vector<Case> cases = {
      {"broadcast_add", -2, 2, -2, 2},    {"broadcast_sub", -2, 2, -2, 2},
      {"broadcast_mul", -2, 2, -2, 2},    {"broadcast_div", -2, 2, 0.5, 2},
      {"broadcast_power", 0.5, 2, -1, 2}, {"broadcast_hypot", 0.5, 2, 0.5, 2},
  };
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{2, 1, 4}, {3, 1}}, {{1}, {2, 3}}, {{2, 3, 1}, {1, 3, 4}}};
  for (const Case& c : cases) {
    for (const auto& [ls, rs] : shapes) {
      INFO(c.op << " " << ls << " " << rs);
      CHECK(CheckNumericGradient(c.op, {},
                                 {RandomArray(ls, c.alo, c.ahi, DType::kFloat64, 5),
                                  RandomArray(rs, c.blo, c.bhi, DType::kFloat64, 6)}));
    }
  }
  // Piecewise ops at points away from ties and jumps.
  NDArray a = Array({2, 3}, {0.5, 2.5, -1.25, 3.1, -0.4, 1.9}, DType::kFloat64);
  NDArray b = Array({3}, {1.1, 1.3, -0.7}, DType::kFloat64);
  for (const char* op : {"broadcast_maximum", "broadcast_minimum", "broadcast_mod",
                         "broadcast_greater", "broadcast_equal", "broadcast_logical_xor"}) {
    INFO(op);
    CHECK(CheckNumericGradient(op, {}, {a, b}));
  }
}

TEST_CASE("broadcast backward ops honour add requests") {
  NDArray g = Array({2, 3}, {1, 2, 3, 4, 5, 6}), a = Array({2, 3}, std::vector<double>(6, 2));
  NDArray b = Array({3}, {10, 20, 30});
  std::vector<NDArray> outs{Array({2, 3}, std::vector<double>(6, 100)),
                            Array({3}, {100, 100, 100})};
  InvokeOptions opt;
  opt.req = {kAddTo, kAddTo};
  Invoke(MakeAttrs("_backward_broadcast_mul"), {g, a, b}, &outs, opt);
  CheckClose(outs[0], {110, 140, 190, 140, 200, 280});  // 100 + g * b
  CheckClose(outs[1], {110, 114, 118});                 // 100 + sum over rows of g * a
  opt.req = {kNullOp, kWriteTo};
  Invoke(MakeAttrs("_backward_broadcast_add"), {g, a, b}, &outs, opt);
  CheckClose(outs[0], {110, 140, 190, 140, 200, 280});
  CheckClose(outs[1], {5, 7, 9});
}

// ---------------------------------------------------------------- scalar forms

TEST_CASE("scalar ops on either side") {
  NDArray x = Array({3}, {-7, 2, 7});
  CheckClose(Scalar1("_plus_scalar", x, 3), {-4, 5, 10});
  CheckClose(Scalar1("_minus_scalar", x, 3), {-10, -1, 4});
  CheckClose(Scalar1("_rminus_scalar", x, 3), {10, 1, -4});
  CheckClose(Scalar1("_mul_scalar", x, 3), {-21, 6, 21});
  CheckClose(Scalar1("_div_scalar", x, 2), {-3.5, 1, 3.5});
  CheckClose(Scalar1("_rdiv_scalar", x, 14), {-2, 7, 2});
  CheckClose(Scalar1("_mod_scalar", x, 3), {2, 2, 1});
  CheckClose(Scalar1("_rmod_scalar", x, 10), {-4, 0, 3});
  CheckClose(Scalar1("_power_scalar", x, 2), {49, 4, 49});
  CheckClose(Scalar1("_rpower_scalar", x, 2), {0.0078125, 4, 128});
  CheckClose(Scalar1("_maximum_scalar", x, 2), {2, 2, 7});
  CheckClose(Scalar1("_minimum_scalar", x, 2), {-7, 2, 2});
  CheckClose(Scalar1("_hypot_scalar", x, 24), {25, 24.08318915758459, 25});
  CheckClose(Scalar1("_equal_scalar", x, 2), {0, 1, 0});
  CheckClose(Scalar1("_not_equal_scalar", x, 2), {1, 0, 1});
  CheckClose(Scalar1("_greater_scalar", x, 2), {0, 0, 1});
  CheckClose(Scalar1("_greater_equal_scalar", x, 2), {0, 1, 1});
  CheckClose(Scalar1("_lesser_scalar", x, 2), {1, 0, 0});
  CheckClose(Scalar1("_lesser_equal_scalar", x, 2), {1, 1, 0});
  CheckClose(Scalar1("_logical_and_scalar", x, 0), {0, 0, 0});
  CheckClose(Scalar1("_logical_or_scalar", x, 0), {1, 1, 1});
  CheckClose(Scalar1("_logical_xor_scalar", x, 1), {0, 0, 0});
  CHECK(op::Op::Get("_PlusScalar") == op::Op::Get("_plus_scalar"));
  CHECK(op::Op::Get("_RMinusScalar") == op::Op::Get("_rminus_scalar"));
  // MXNet's default scalar is 1, and symbol files carry is_int.
  CheckClose(Run("_plus_scalar", {x}), {-6, 3, 8});
  CheckClose(Run("_plus_scalar", {x}, {{"scalar", "2"}, {"is_int", "True"}}), {-5, 4, 9});
  for (DType t : {DType::kFloat16, DType::kBFloat16, DType::kFloat64}) {
    INFO(DTypeName(t));
    CheckClose(Scalar1("_mul_scalar", x.AsType(t), 0.5), {-3.5, 1, 3.5}, RelTol(t));
    CHECK(Scalar1("_mul_scalar", x.AsType(t), 0.5).dtype() == t);
  }
}

TEST_CASE("scalar ops on integer and bool arrays") {
  NDArray x = Array({3}, {-7, 2, 7}, DType::kInt32);
  CheckClose(Scalar1("_plus_scalar", x, 2.7), {-5, 4, 9});  // the scalar becomes int32 2
  CheckClose(Scalar1("_div_scalar", x, 2), {-3, 1, 3});
  CheckClose(Scalar1("_div_scalar", x, 0), {0, 0, 0});
  CheckClose(Scalar1("_mod_scalar", x, 0), {0, 0, 0});
  CheckClose(Scalar1("_mod_scalar", x, 3), {2, 2, 1});
  CheckClose(Scalar1("_rdiv_scalar", x, 14), {-2, 7, 2});
  CheckClose(Scalar1("_power_scalar", x, 2), {49, 4, 49});
  // Comparisons use the exact scalar.
  CheckClose(Scalar1("_greater_equal_scalar", x, 2.5), {0, 0, 1});
  CheckClose(Scalar1("_lesser_scalar", x, 2.5), {1, 1, 0});
  CHECK(Scalar1("_greater_scalar", x, 0).dtype() == DType::kInt32);
  // A scalar beyond the type's range is clamped, not undefined behaviour.
  CheckClose(Scalar1("_mul_scalar", Array({2}, {1, -1}, DType::kInt8), 1e10), {127, -127});
  NDArray b = Array({2}, {0, 1}, DType::kBool);
  CheckClose(Scalar1("_equal_scalar", b, 1), {0, 1});
  CheckClose(Scalar1("_logical_or_scalar", b, 0), {0, 1});
  CHECK(Contains(ErrorOf([&] { Scalar1("_plus_scalar", b, 1); }),
                 "_plus_scalar: dtype bool is not supported"));
  CHECK(Contains(ErrorOf([&] { Scalar1("_hypot_scalar", x, 1); }),
                 "_hypot_scalar: dtype int32 is not supported"));
  CHECK(Contains(ErrorOf([&] {
                   Invoke("_plus_scalar", {x}, {{"scalar", "abc"}});
                 }),
                 "_plus_scalar: parameter 'scalar' got 'abc', expected double"));
}

TEST_CASE("scalar gradients match finite differences") {
  const NDArray pos = RandomArray({2, 3}, 0.5, 2, DType::kFloat64, 8);
  for (const char* op :
       {"_plus_scalar", "_minus_scalar", "_rminus_scalar", "_mul_scalar", "_div_scalar",
        "_rdiv_scalar", "_power_scalar", "_rpower_scalar", "_hypot_scalar"}) {
    INFO(op);
    CHECK(CheckNumericGradient(op, {{"scalar", "1.7"}}, {pos}));
  }
  const NDArray spread = Array({4}, {-1.3, 0.4, 1.2, 2.9}, DType::kFloat64);
  for (const char* op : {"_mod_scalar", "_rmod_scalar", "_maximum_scalar", "_minimum_scalar",
                         "_greater_scalar", "_equal_scalar", "_logical_and_scalar"}) {
    INFO(op);
    CHECK(CheckNumericGradient(op, {{"scalar", "0.7"}}, {spread}));
  }
}

// ---------------------------------------------------------------- requests and views

TEST_CASE("every family honours add and null requests") {
  InvokeOptions add;
  add.req = {kAddTo};
  std::vector<NDArray> out{Array({3}, {10, 20, 30})};
  Invoke(MakeAttrs("exp"), {Array({3}, {0, 0, 0})}, &out, add);
  CheckClose(out[0], {11, 21, 31});
  Invoke(MakeAttrs("elemwise_add"), {Array({3}, {1, 2, 3}), Array({3}, {1, 1, 1})}, &out, add);
  CheckClose(out[0], {13, 24, 35});
  Invoke(MakeAttrs("_mul_scalar", {{"scalar", "2"}}), {Array({3}, {1, 2, 3})}, &out, add);
  CheckClose(out[0], {15, 28, 41});
  std::vector<NDArray> out2{Array({2, 3}, std::vector<double>(6, 1))};
  Invoke(MakeAttrs("broadcast_mul"), {Array({2, 1}, {1, 2}), Array({3}, {1, 2, 3})}, &out2, add);
  CheckClose(out2[0], {2, 3, 4, 3, 5, 7});
  Invoke(MakeAttrs("broadcast_add"), {Array({1}, {1}), Array({2, 3}, {1, 2, 3, 4, 5, 6})}, &out2,
         add);
  CheckClose(out2[0], {4, 6, 8, 8, 11, 14});
  Invoke(MakeAttrs("_backward_exp"), {Array({3}, {1, 1, 1}), Array({3}, {2, 3, 4})}, &out, add);
  CheckClose(out[0], {17, 31, 45});
  std::vector<NDArray> f16{Array({2}, {1, 2}, DType::kFloat16)};
  Invoke(MakeAttrs("_plus_scalar", {{"scalar", "0.5"}}), {Array({2}, {1, 1}, DType::kFloat16)},
         &f16, add);
  CheckClose(f16[0], {2.5, 3.5});
  InvokeOptions null;
  null.req = {kNullOp};
  Invoke(MakeAttrs("negative"), {Array({3}, {1, 2, 3})}, &out, null);
  Invoke(MakeAttrs("broadcast_sub"), {Array({3}, {1, 2, 3}), Array({1}, {1})}, &out, null);
  CheckClose(out[0], {17, 31, 45});
}

TEST_CASE("outputs may be an input (in place) or views of other arrays") {
  NDArray x = Array({3}, {1, 2, 3});
  std::vector<NDArray> self{x};
  Invoke(MakeAttrs("square"), {x}, &self);
  CheckClose(x, {1, 4, 9});
  Invoke(MakeAttrs("elemwise_sub"), {Array({3}, {10, 10, 10}), x}, &self);
  CheckClose(x, {9, 6, 1});
  Invoke(MakeAttrs("broadcast_mul"), {x, Array({1}, {2})}, &self);
  CheckClose(x, {18, 12, 2});
  Invoke(MakeAttrs("_rminus_scalar", {{"scalar", "20"}}), {x}, &self);
  CheckClose(x, {2, 8, 18});
  Invoke(MakeAttrs("elemwise_mul"), {x, x}, &self);
  CheckClose(x, {4, 64, 324});

  // Views: slices and reshapes share memory with their base.
  NDArray base = Array({4, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  CheckClose(Run("negative", {base.Slice(1, 3)}), {-3, -4, -5, -6, -7, -8});
  CheckClose(Run("broadcast_add", {base.Reshape(Shape{3, 4}), Array({3, 1}, {100, 200, 300})}),
             {100, 101, 102, 103, 204, 205, 206, 207, 308, 309, 310, 311});
  std::vector<NDArray> into{base.Slice(1, 3)};
  Invoke(MakeAttrs("_plus_scalar", {{"scalar", "100"}}), {Array({2, 3}, {1, 2, 3, 4, 5, 6})},
         &into);
  CheckClose(base, {0, 1, 2, 101, 102, 103, 104, 105, 106, 9, 10, 11});
  // Overlapping views as inputs and output: the result is as if computed
  // from the old values.
  std::vector<NDArray> overlap{base.Slice(1, 3)};
  Invoke(MakeAttrs("elemwise_add"), {base.Slice(0, 2), base.Slice(2, 4)}, &overlap);
  CheckClose(base, {0, 1, 2, 104, 106, 108, 110, 112, 114, 9, 10, 11});
}

TEST_CASE("large and misaligned arrays take the threaded and streaming paths") {
  const int64_t n = (int64_t{1} << 21) + 5;  // 8 MiB of float32: non-temporal stores
  std::vector<double> av(n + 1), bv(n + 1);
  for (int64_t i = 0; i <= n; ++i) {
    av[i] = double(i % 1000);
    bv[i] = double(i % 7) - 3;
  }
  // A one-element offset puts the output off its cache-line alignment.
  NDArray a = Array({n + 1}, av).Slice(1, n + 1), b = Array({n + 1}, bv).Slice(1, n + 1);
  std::vector<NDArray> out{NDArray(Shape{n + 1}, Context::CPU()).Slice(1, n + 1)};
  Invoke(MakeAttrs("elemwise_add"), {a, b}, &out);
  std::vector<double> expect(n);
  for (int64_t i = 0; i < n; ++i) expect[i] = av[i + 1] + bv[i + 1];
  CheckClose(out[0], expect);
  for (int64_t i = 0; i < n; ++i) expect[i] = av[i + 1] * 0.5;
  CheckClose(Scalar1("_mul_scalar", a, 0.5), expect);
  NDArray d = Array({n}, std::vector<double>(av.begin(), av.begin() + n), DType::kFloat64);
  for (int64_t i = 0; i < n; ++i) expect[i] = av[i] + 1;
  CheckClose(Scalar1("_plus_scalar", d, 1), expect);
  // A broadcast gradient with many rows to sum, on threads.
  NDArray g = Array({4096, 16}, std::vector<double>(4096 * 16, 0.5));
  std::vector<NDArray> grads;
  Invoke(MakeAttrs("_backward_broadcast_add"),
         {g, Array({1, 16}, std::vector<double>(16, 0)),
          Array({4096, 1}, std::vector<double>(4096, 0))},
         &grads);
  CheckClose(grads[0], std::vector<double>(16, 2048));
  CheckClose(grads[1], std::vector<double>(4096, 8));
}

TEST_CASE("elementwise ops on the GPU match the CPU") {
  if (NumGPUs() == 0) return;  // skips cleanly without a GPU
  const Context gpu = Context::GPU(0);
  NDArray a = RandomArray({3, 4, 5}, 0.5, 2, DType::kFloat32, 21);
  NDArray b = RandomArray({4, 1}, 0.5, 2, DType::kFloat32, 22);
  NDArray ag = a.CopyTo(gpu), bg = b.CopyTo(gpu);
  for (const char* op : {"exp", "gammaln", "relu", "abs"})
    CheckClose(Run(op, {ag}).CopyTo(Context::CPU()), Run(op, {a}).ToVector(), 1e-5, 1e-6);
  CheckClose(Run("clip", {ag}, {{"a_min", "0.7"}, {"a_max", "1.5"}}).CopyTo(Context::CPU()),
             Run("clip", {a}, {{"a_min", "0.7"}, {"a_max", "1.5"}}).ToVector());
  for (const char* op :
       {"broadcast_add", "broadcast_power", "broadcast_greater", "broadcast_mod"}) {
    INFO(op);
    CheckClose(Run(op, {ag, bg}).CopyTo(Context::CPU()), Run(op, {a, b}).ToVector(), 1e-5, 1e-6);
  }
  CheckClose(Run("elemwise_mul", {ag, ag}).CopyTo(Context::CPU()),
             Run("elemwise_mul", {a, a}).ToVector());
  CheckClose(Scalar1("_rdiv_scalar", ag, 3).CopyTo(Context::CPU()),
             Scalar1("_rdiv_scalar", a, 3).ToVector());
  NDArray g = RandomArray({3, 4, 5}, -1, 1, DType::kFloat32, 23);
  std::vector<NDArray> cpu_grads, gpu_grads;
  Invoke(MakeAttrs("_backward_broadcast_mul"), {g, a, b}, &cpu_grads);
  Invoke(MakeAttrs("_backward_broadcast_mul"), {g.CopyTo(gpu), ag, bg}, &gpu_grads);
  CheckClose(gpu_grads[0].CopyTo(Context::CPU()), cpu_grads[0].ToVector(), 1e-5, 1e-5);
  CheckClose(gpu_grads[1].CopyTo(Context::CPU()), cpu_grads[1].ToVector(), 1e-4, 1e-5);
}
