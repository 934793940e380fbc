// Reductions: values against hand-computed and naive-loop references, axes,
// keepdims/exclude, dtypes, NaN, requests, views, gradients and errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "engine/ndarray/imperative.h"
#include "engine/op/infer_utils.h"
#include "engine/op/op_attr_types.h"
#include "ops/tensor/reduce_utils.h"
#include "tests/cpp/op_test_util.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using tessera::test::Array;
using tessera::test::CheckClose;
using tessera::test::CheckNumericGradient;
using tessera::test::Contains;
using tessera::test::ErrorOf;
using tessera::test::Iota;
using tessera::test::RandomArray;
using tessera::test::Run;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

// Naive reference: reduces `x` of shape `s` over the axes in `mask` with
// `combine`, starting from `init` (row-major over the kept axes).
template <typename F>
std::vector<double> NaiveReduce(const std::vector<double>& x, const Shape& s, uint32_t mask,
                                double init, F combine) {
  Shape small = s;
  for (int i = 0; i < s.ndim(); ++i)
    if (mask & (1u << i)) small[i] = 1;
  std::vector<double> out(static_cast<size_t>(small.Size()), init);
  for (int64_t i = 0; i < s.Size(); ++i) {
    int64_t rem = i, o = 0, ostride = 1;
    for (int d = s.ndim() - 1; d >= 0; --d) {
      const int64_t c = rem % s[d];
      rem /= s[d];
      if (!(mask & (1u << d))) o += c * ostride;
      ostride *= small[d];
    }
    out[o] = combine(out[o], x[i]);
  }
  return out;
}

double Add(double a, double b) {
  return a + b;
}

}  // namespace

TEST_CASE("sum, mean, prod, max, min over all axes and single axes") {
  NDArray x = Array({2, 3}, {1, 2, 3, 4, 5, 6});
  NDArray all = Run("sum", {x});
  CHECK(all.shape() == Shape{1});
  CheckClose(all, {21});
  CheckClose(Run("sum", {x}, {{"axis", "()"}}), {21});
  CheckClose(Run("sum", {x}, {{"axis", "0"}}), {5, 7, 9});
  CheckClose(Run("sum", {x}, {{"axis", "1"}}), {6, 15});
  CheckClose(Run("sum", {x}, {{"axis", "-1"}}), {6, 15});
  NDArray kd = Run("sum", {x}, {{"axis", "1"}, {"keepdims", "True"}});
  CHECK(kd.shape() == Shape{2, 1});
  CheckClose(kd, {6, 15});
  CHECK(Run("sum", {x}, {{"keepdims", "1"}}).shape() == Shape{1, 1});
  CheckClose(Run("sum", {x}, {{"axis", "1"}, {"exclude", "True"}}), {5, 7, 9});
  CheckClose(Run("sum", {x}, {{"axis", "(0, 1)"}, {"exclude", "True"}}), {1, 2, 3, 4, 5, 6});
  CheckClose(Run("sum_axis", {x}, {{"axis", "0"}}), {5, 7, 9});
  CheckClose(Run("mean", {x}, {{"axis", "0"}}), {2.5, 3.5, 4.5});
  CheckClose(Run("mean", {x}), {3.5});
  CheckClose(Run("prod", {x}, {{"axis", "1"}}), {6, 120});
  CheckClose(Run("prod", {x}), {720});
  CheckClose(Run("max", {x}, {{"axis", "0"}}), {4, 5, 6});
  CheckClose(Run("max_axis", {x}, {{"axis", "1"}}), {3, 6});
  CheckClose(Run("min", {x}, {{"axis", "1"}}), {1, 4});
  CheckClose(Run("min_axis", {x}), {1});
  CheckClose(Run("nansum", {x}, {{"axis", "0"}}), {5, 7, 9});
  CheckClose(Run("nanprod", {x}, {{"axis", "0"}}), {4, 10, 18});
}

TEST_CASE("sets of axes on a 3-d array, kept and reduced in any pattern") {
  NDArray x = Array({2, 3, 4}, Iota(24));
  NDArray a = Run("sum", {x}, {{"axis", "(0, 2)"}, {"keepdims", "true"}});
  CHECK(a.shape() == Shape{1, 3, 1});
  CheckClose(a, {60, 92, 124});
  CheckClose(Run("sum", {x}, {{"axis", "(1,)"}, {"exclude", "true"}}), {60, 92, 124});
  NDArray b = Run("sum", {x}, {{"axis", "1"}});
  CHECK(b.shape() == Shape{2, 4});
  CheckClose(b, {12, 15, 18, 21, 48, 51, 54, 57});
  CheckClose(Run("max", {x}, {{"axis", "2"}}), {3, 7, 11, 15, 19, 23});
  CheckClose(Run("min", {x}, {{"axis", "(2, 0)"}}), {0, 4, 8});
  // Axes of size 1 are dropped; reducing only them copies.
  NDArray y = Array({2, 1, 3}, {1, 2, 3, 4, 5, 6});
  CheckClose(Run("sum", {y}, {{"axis", "1"}}), {1, 2, 3, 4, 5, 6});
  CheckClose(Run("prod", {Array({1}, {7})}), {7});
}

TEST_CASE("large reductions take the chunked paths and match a naive loop") {
  struct Case {
    Shape shape;
    const char* axis;
    uint32_t mask;
  };
  const Case cases[] = {
      {{2, 70000}, "1", 0b10},             // few outputs, long contiguous rows: chunked rows
      {{70000, 3}, "0", 0b01},             // few columns, many rows: chunked columns
      {{300, 257}, "()", 0b11},            // full reduction
      {{3, 40, 5, 60}, "(1, 3)", 0b1010},  // kept/reduced alternating, inner reduced
      {{30, 4, 50, 6}, "(0, 2)", 0b0101},  // alternating, inner kept
      {{64, 600}, "0", 0b01},              // many columns
  };
  for (const Case& c : cases) {
    INFO("shape " << c.shape << " axis " << c.axis);
    NDArray x = RandomArray(c.shape, -1, 1, DType::kFloat64, 3);
    const std::vector<double> xv = x.ToVector();
    CheckClose(Run("sum", {x}, {{"axis", c.axis}}), NaiveReduce(xv, c.shape, c.mask, 0, Add), 1e-12,
               1e-10);
    CheckClose(Run("max", {x}, {{"axis", c.axis}}),
               NaiveReduce(xv, c.shape, c.mask, -1e300,
                           [](double a, double b) { return std::max(a, b); }));
    // float32 input: the result agrees with the double reference to float rounding.
    CheckClose(Run("sum", {x.AsType(DType::kFloat32)}, {{"axis", c.axis}}),
               NaiveReduce(x.AsType(DType::kFloat32).ToVector(), c.shape, c.mask, 0, Add), 1e-6,
               1e-4);
  }
}

TEST_CASE("float32 sums accumulate accurately; 16-bit floats accumulate in float") {
  // 2^20 copies of float(0.1): a single float accumulator drifts by ~1e-4
  // relative; blocks of 256 in float, summed in double, stay within the
  // float32 output's own rounding (a few 1e-8).
  std::vector<double> v(1 << 20, 0.1);
  NDArray x = Array({1 << 20}, v, DType::kFloat32);
  CheckClose(Run("sum", {x}), {104857.6015625}, 2e-7, 0);
  CheckClose(Run("mean", {x}), {104857.6015625 / (1 << 20)}, 2e-7, 0);
  // Along columns (the leading axis) the accumulators are double.
  CheckClose(Run("sum", {x.Reshape(Shape{1 << 18, 4})}, {{"axis", "0"}}),
             std::vector<double>(4, 104857.6015625 / 4), 1e-9, 0);
  // A float16 accumulator would stop at 2048 (2049 is not representable).
  NDArray h = Array({4096}, std::vector<double>(4096, 1), DType::kFloat16);
  NDArray hs = Run("sum", {h});
  CHECK(hs.dtype() == DType::kFloat16);
  CheckClose(hs, {4096});
  CheckClose(Run("sum", {Array({4096}, std::vector<double>(4096, 1), DType::kBFloat16)}), {4096});
}

TEST_CASE("every dtype the ops claim") {
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                  DType::kUint8, DType::kInt8, DType::kInt32, DType::kInt64}) {
    INFO(DTypeName(t));
    NDArray x = Array({2, 3}, {1, 2, 3, 4, 5, 6}, t);
    for (const char* op : {"sum", "mean", "prod", "max", "min", "nansum", "nanprod"})
      CHECK(Run(op, {x}, {{"axis", "0"}}).dtype() == t);
    CheckClose(Run("sum", {x}, {{"axis", "0"}}), {5, 7, 9});
    CheckClose(Run("prod", {x}, {{"axis", "1"}}), {6, 120});
    CheckClose(Run("max", {x}, {{"axis", "1"}}), {3, 6});
    CheckClose(Run("min", {x}, {{"axis", "0"}}), {1, 2, 3});
    CheckClose(Run("nansum", {x}), {21});
    NDArray am = Run("argmax", {x}, {{"axis", "1"}});
    CHECK(am.dtype() == t);  // MXNet: indices in the input's dtype
    CHECK(Run("argmin", {x}).dtype() == t);
    CheckClose(am, {2, 2});
    CheckClose(Run("argmin", {x}), {0});
  }
  // Integer means keep the dtype and truncate toward zero.
  CheckClose(Run("mean", {Array({2}, {1, 2}, DType::kInt32)}), {1});
  CheckClose(Run("mean", {Array({2}, {-1, -2}, DType::kInt64)}), {-1});
  // Integer sums wrap to the input dtype after accumulating in int64.
  CheckClose(Run("sum", {Array({2}, {100, 100}, DType::kInt8)}), {-56});
  CheckClose(Run("mean", {Array({2}, {100, 100}, DType::kInt8)}), {100});
  // bool: max is any, min is all.
  NDArray b = Array({2, 2}, {1, 0, 0, 0}, DType::kBool);
  NDArray bm = Run("max", {b}, {{"axis", "1"}});
  CHECK(bm.dtype() == DType::kBool);
  CheckClose(bm, {1, 0});
  CheckClose(Run("min", {b}, {{"axis", "0"}}), {0, 0});
  CheckClose(Run("min", {Array({2}, {1, 1}, DType::kBool)}), {1});
}

TEST_CASE("NaN propagates through max and min and is skipped by nansum and nanprod") {
  NDArray x = Array({2, 2}, {1, kNaN, 2, 3});
  CheckClose(Run("max", {x}, {{"axis", "1"}}), {kNaN, 3});
  CheckClose(Run("min", {x}, {{"axis", "1"}}), {kNaN, 2});
  CheckClose(Run("max", {x}), {kNaN});
  CheckClose(Run("max", {x.AsType(DType::kFloat32)}, {{"axis", "0"}}), {2, kNaN});
  CheckClose(Run("sum", {x}, {{"axis", "1"}}), {kNaN, 5});
  CheckClose(Run("nansum", {x}, {{"axis", "1"}}), {1, 5});
  CheckClose(Run("nanprod", {x}, {{"axis", "1"}}), {1, 6});
  CheckClose(Run("nansum", {Array({2}, {kNaN, kNaN})}), {0});
  CheckClose(Run("argmax", {Array({4}, {1, kNaN, 3, kNaN})}), {1});
  CheckClose(Run("argmin", {Array({3}, {1, 0, kNaN})}), {2});
}

TEST_CASE("write, add and aliased outputs; views as inputs") {
  NDArray x = Array({2, 3}, {1, 2, 3, 4, 5, 6});
  NDArray out = Array({3}, {10, 20, 30});
  std::vector<NDArray> outs{out};
  InvokeOptions add;
  add.req = {kAddTo};
  Invoke(MakeAttrs("sum", {{"axis", "0"}}), {x}, &outs, add);
  CheckClose(out, {15, 27, 39});
  Invoke(MakeAttrs("max", {{"axis", "0"}}), {x}, &outs, add);
  CheckClose(out, {19, 32, 45});
  Invoke(MakeAttrs("argmax", {{"axis", "0"}}), {x}, &outs, add);
  CheckClose(out, {20, 33, 46});
  Invoke(MakeAttrs("sum", {{"axis", "0"}}), {x}, &outs);  // write
  CheckClose(out, {5, 7, 9});
  // Output = input (a reduction over a size-1 axis keeps the shape).
  NDArray col = Array({3, 1}, {1, 2, 3});
  std::vector<NDArray> self{col};
  Invoke(MakeAttrs("prod", {{"axis", "1"}, {"keepdims", "1"}}), {col}, &self);
  CheckClose(col, {1, 2, 3});
  // Views: a slice and a reshape of one array share its memory.
  NDArray base = Array({4, 3}, Iota(12));
  CheckClose(Run("sum", {base.Slice(1, 3)}, {{"axis", "0"}}), {9, 11, 13});
  CheckClose(Run("max", {base.Reshape(Shape{3, 4})}, {{"axis", "1"}}), {3, 7, 11});
  // Writing into a view of a bigger array leaves the rest alone.
  std::vector<NDArray> into{base.At(0)};
  Invoke(MakeAttrs("min", {{"axis", "0"}}), {Array({2, 3}, {7, 8, 9, 1, 1, 1})}, &into);
  CheckClose(base, {1, 1, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11});
}

TEST_CASE("argmax and argmin") {
  NDArray x = Array({2, 3}, {1, 5, 3, 4, 2, 6});
  CheckClose(Run("argmax", {x}, {{"axis", "1"}}), {1, 2});
  CheckClose(Run("argmax", {x}, {{"axis", "0"}}), {1, 0, 1});
  CheckClose(Run("argmax", {x}), {5});
  CHECK(Run("argmax", {x}).shape() == Shape{1});
  NDArray kd = Run("argmax", {x}, {{"axis", "-1"}, {"keepdims", "True"}});
  CHECK(kd.shape() == Shape{2, 1});
  CheckClose(Run("argmin", {x}, {{"axis", "1"}}), {0, 1});
  CheckClose(Run("argmin", {x}, {{"axis", "0"}}), {0, 1, 0});
  CheckClose(Run("argmax", {Array({3}, {3, 1, 3})}), {0});  // ties: first
  CheckClose(Run("argmin", {Array({3}, {1, 0, 0})}), {1});
  // Column layout and long rows against a naive loop.
  NDArray r = RandomArray({5, 300, 7}, -1, 1);
  const std::vector<double> v = r.ToVector();
  std::vector<double> want;
  for (int m = 0; m < 5; ++m)
    for (int n = 0; n < 7; ++n) {
      int best = 0;
      for (int k = 1; k < 300; ++k)
        if (v[(m * 300 + k) * 7 + n] > v[(m * 300 + best) * 7 + n]) best = k;
      want.push_back(best);
    }
  CheckClose(Run("argmax", {r}, {{"axis", "1"}}), want);
  // argmax has no gradient: its FGradient gives zeros.
  CHECK(CheckNumericGradient("argmax", {{"axis", "1"}}, {RandomArray({3, 4}, -1, 1)}));
}

TEST_CASE("norm") {
  NDArray x = Array({2, 2}, {1, 2, 3, 4});
  CheckClose(Run("norm", {x}), {5.477225575051661});
  CheckClose(Run("norm", {Array({2, 2}, {1, -2, 3, 4})}, {{"ord", "1"}, {"axis", "1"}}), {3, 7});
  CheckClose(Run("norm", {x}, {{"axis", "0"}}), {std::sqrt(10.0), std::sqrt(20.0)});
  NDArray kd = Run("norm", {x}, {{"axis", "(0,1)"}, {"keepdims", "True"}});
  CHECK(kd.shape() == Shape{1, 1});
  NDArray f64 = Run("norm", {x}, {{"out_dtype", "float64"}});
  CHECK(f64.dtype() == DType::kFloat64);
  CheckClose(f64, {5.477225575051661}, 1e-7);
  CheckClose(Run("norm", {x.AsType(DType::kFloat16)}), {5.477225575051661}, 1e-3);
  CheckClose(Run("norm", {Array({2}, {0, 0})}), {0});
}

TEST_CASE("gradients match finite differences") {
  NDArray x3 = RandomArray({2, 3, 4}, -2, 2);
  CHECK(CheckNumericGradient("sum", {{"axis", "1"}}, {x3}));
  CHECK(CheckNumericGradient("sum", {}, {x3}));
  CHECK(CheckNumericGradient("sum", {{"axis", "(0, 2)"}, {"keepdims", "1"}}, {x3}));
  CHECK(CheckNumericGradient("mean", {{"axis", "(0, 2)"}}, {x3}));
  CHECK(CheckNumericGradient("mean", {{"axis", "1"}, {"exclude", "1"}}, {x3}));
  CHECK(CheckNumericGradient("prod", {{"axis", "2"}}, {x3}));
  CHECK(CheckNumericGradient("prod", {{"axis", "0"}}, {x3}));
  CHECK(CheckNumericGradient("nansum", {{"axis", "1"}}, {x3}));
  CHECK(CheckNumericGradient("nanprod", {{"axis", "(1, 2)"}}, {x3}));
  CHECK(CheckNumericGradient("max", {{"axis", "1"}}, {x3}));
  CHECK(CheckNumericGradient("min", {{"axis", "(0, 2)"}}, {x3}));
  CHECK(CheckNumericGradient("max", {}, {x3}));
  CHECK(CheckNumericGradient("norm", {}, {x3}));
  CHECK(CheckNumericGradient("norm", {{"axis", "2"}, {"keepdims", "1"}}, {x3}));
  // L1 is kinked at 0: keep every element away from it.
  NDArray away = Array({2, 3}, {0.5, -1.5, 2, -0.7, 1.1, -0.3}, DType::kFloat64);
  CHECK(CheckNumericGradient("norm", {{"ord", "1"}, {"axis", "1"}}, {away}));
}

TEST_CASE("gradients at zeros, ties and NaN") {
  auto grad = [](const char* op, const NDArray& x, op::ParamDict params, bool use_out) {
    NDArray y = Run(op, {x}, params);
    NDArray g = Array(y.shape(), std::vector<double>(size_t(y.Size()), 1), x.dtype());
    std::vector<NDArray> in{g, x};
    if (use_out) in.push_back(y);
    return Run(std::string("_backward_") + op, in, params);
  };
  // prod: the product of the others, also where x is 0 (no division by x).
  CheckClose(grad("prod", Array({3}, {2, 0, 3}), {}, true), {0, 6, 0});
  CheckClose(grad("prod", Array({3}, {0, 0, 2}), {}, true), {0, 0, 0});
  CheckClose(grad("prod", Array({2, 3}, {2, 0, 3, 1, 2, 4}), {{"axis", "1"}}, true),
             {0, 6, 0, 8, 4, 2});
  CheckClose(grad("nanprod", Array({3}, {2, kNaN, 0}), {}, true), {0, 0, 2});
  CheckClose(grad("nansum", Array({3}, {2, kNaN, 0}), {}, false), {1, 0, 1});
  // max/min: every element equal to the extreme gets the gradient.
  CheckClose(grad("max", Array({3}, {3, 1, 3}), {}, true), {1, 0, 1});
  CheckClose(grad("min", Array({2, 2}, {1, 1, 2, 5}), {{"axis", "1"}}, true), {1, 1, 1, 0});
  CheckClose(grad("norm", Array({2}, {0, 0}), {}, true), {0, 0});
  CheckClose(grad("mean", Array({4}, {1, 2, 3, 4}, DType::kFloat32), {}, false),
             {0.25, 0.25, 0.25, 0.25});
  // Backward with add and in place (the gradient may overwrite data).
  NDArray x = Array({2, 2}, {1, 2, 3, 4});
  NDArray gx = Array({2, 2}, {10, 10, 10, 10});
  std::vector<NDArray> outs{gx};
  InvokeOptions add;
  add.req = {kAddTo};
  Invoke(MakeAttrs("_backward_sum", {{"axis", "0"}}), {Array({2}, {1, 2}), x}, &outs, add);
  CheckClose(gx, {11, 12, 11, 12});
  std::vector<NDArray> self{x};
  Invoke(MakeAttrs("_backward_mean", {{"axis", "1"}}), {Array({2}, {2, 4}), x}, &self);
  CheckClose(x, {1, 1, 2, 2});
}

TEST_CASE("errors name the op, the argument and the shapes") {
  NDArray x = Array({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(Contains(ErrorOf([&] {
                   Run("sum", {x}, {{"axis", "2"}});
                 }),
                 "sum on input of shape (2,3): axis 2 is out of range"));
  CHECK(Contains(ErrorOf([&] {
                   Run("mean", {x}, {{"axis", "(-3,)"}});
                 }),
                 "mean on input of shape (2,3): axis -3 is out of range"));
  CHECK(Contains(ErrorOf([&] {
                   Run("max", {x}, {{"axis", "(1, -1)"}});
                 }),
                 "max: axis -1 is listed twice in axis=(1,-1) (input shape (2,3))"));
  CHECK(Contains(ErrorOf([&] {
                   Run("sum", {x}, {{"keepdims", "maybe"}});
                 }),
                 "sum: parameter 'keepdims' got 'maybe'"));
  CHECK(Contains(ErrorOf([&] {
                   Run("sum", {x}, {{"axis", "a"}});
                 }),
                 "sum: parameter 'axis' got 'a'"));
  CHECK(Contains(ErrorOf([&] {
                   Run("norm", {x}, {{"ord", "3"}});
                 }),
                 "norm: parameter 'ord' is 3, must be in [1, 2]"));
  CHECK(Contains(ErrorOf([&] { Run("norm", {x.AsType(DType::kInt32)}); }),
                 "norm: input 0 has dtype int32, supported: float16"));
  CHECK(Contains(ErrorOf([&] {
                   Run("norm", {x}, {{"out_dtype", "int32"}});
                 }),
                 "norm: out_dtype has dtype int32"));
  CHECK(Contains(ErrorOf([&] {
                   Run("argmax", {x}, {{"axis", "2"}});
                 }),
                 "argmax on input of shape (2,3): axis 2 is out of range"));
  CHECK(Contains(ErrorOf([&] {
                   Run("argmax", {x}, {{"axis", "(0,1)"}});
                 }),
                 "argmax: parameter 'axis' got '(0,1)'"));
  CHECK(Contains(ErrorOf([&] { Run("sum", {x.AsType(DType::kBool)}); }),
                 "sum: input 0 has dtype bool, supported: every dtype but bool"));
  CHECK(Contains(ErrorOf([&] { Run("argmin", {x.AsType(DType::kBool)}); }),
                 "argmin: input 0 has dtype bool"));
  // A given output of the wrong shape.
  std::vector<NDArray> bad{Array({2}, {0, 0})};
  CHECK(Contains(ErrorOf([&] {
                   Invoke(MakeAttrs("sum", {{"axis", "0"}}), {x}, &bad);
                 }),
                 "sum: output 0 has shape (2,) but (3,) is required"));
  // The backward checks that ograd has the reduced shape.
  CHECK(Contains(ErrorOf([&] {
                   Run("_backward_sum", {Array({2}, {1, 1}), x}, {{"axis", "0"}});
                 }),
                 "_backward_sum: input 0 has shape (2,) but (3,) is required"));
}

TEST_CASE("shape inference fills unknowns both ways") {
  auto attrs = MakeAttrs("sum", {{"axis", "1"}, {"keepdims", "True"}});
  const auto& infer = op::Op::GetAttr<op::FInferShape>("FInferShape")[attrs->op];
  std::vector<Shape> in{Shape{}}, out{Shape{4, 1, 5}};
  CHECK_FALSE(infer(*attrs, &in, &out));
  CHECK(in[0] == Shape({4, 0, 5}));
  std::vector<Shape> in2{Shape{0, 3, 5}}, out2{Shape{4, 1, 0}};
  CHECK(infer(*attrs, &in2, &out2));
  CHECK(in2[0] == Shape({4, 3, 5}));
  CHECK(out2[0] == Shape({4, 1, 5}));
  auto flat = MakeAttrs("max", {{"axis", "0"}});
  std::vector<Shape> in3{Shape{0, 3}}, out3{Shape{}};
  CHECK_FALSE(op::Op::GetAttr<op::FInferShape>("FInferShape")[flat->op](*flat, &in3, &out3));
  CHECK(out3[0] == Shape({3}));
}

TEST_CASE("ReduceToShape sums to any broadcast-compatible shape") {
  std::vector<float> in(24);
  for (size_t i = 0; i < in.size(); ++i) in[i] = float(i);
  TBlob src(in.data(), Shape{2, 3, 4}, DType::kFloat32);
  op::OpContext ctx;
  std::vector<float> a(3, 100.f);
  op::ReduceToShape<op::cpu>(ctx, src, TBlob(a.data(), Shape{3, 1}, DType::kFloat32), kWriteTo);
  CHECK(a == std::vector<float>{60, 92, 124});
  std::vector<float> b(4, 1.f);
  op::ReduceToShape<op::cpu>(ctx, src, TBlob(b.data(), Shape{4}, DType::kFloat32), kAddTo);
  CHECK(b == std::vector<float>{61, 67, 73, 79});
  std::vector<float> c(24);
  op::ReduceToShape<op::cpu>(ctx, src, TBlob(c.data(), Shape{2, 3, 4}, DType::kFloat32), kWriteTo);
  CHECK(c == in);
  std::vector<float> d(2);
  CHECK(Contains(ErrorOf([&] {
                   op::ReduceToShape<op::cpu>(ctx, src, TBlob(d.data(), Shape{2}, DType::kFloat32),
                                              kWriteTo);
                 }),
                 "ReduceToShape: cannot reduce shape (2,3,4) to (2,)"));
}
