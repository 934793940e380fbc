// Shape operators: reshape, flatten, expand_dims, squeeze, transpose,
// broadcast_to/like, tile, repeat, flip, concat, stack, split, slice,
// slice_axis, slice_like. Values against hand-written references, every
// dtype, write/add/in-place requests, aliasing views, numeric gradients and
// the errors for bad shapes and parameters.
#include <doctest/doctest.h>

#include <numeric>

#include "engine/ndarray/imperative.h"
#include "tests/cpp/op_test_util.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using tessera::test::Array;
using tessera::test::CheckClose;
using tessera::test::CheckNumericGradient;
using tessera::test::Contains;
using tessera::test::ErrorOf;
using tessera::test::Iota;
using tessera::test::IotaArray;
using tessera::test::RandomArray;
using tessera::test::Run;

namespace {

const DType kAllTypes[] = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                           DType::kUint8,   DType::kInt8,    DType::kInt32,   DType::kInt64};

NDArray Rand(const Shape& s, uint64_t seed = 1) {
  return RandomArray(s, -1, 1, DType::kFloat64, seed);
}
std::string ErrorOfRun(std::string_view op, const std::vector<NDArray>& in, op::ParamDict p) {
  return ErrorOf([&] { Run(op, in, std::move(p)).WaitToRead(); });
}

}  // namespace

TEST_CASE("reshape resolves MXNet's special codes") {
  NDArray x = IotaArray({2, 3, 4});
  auto shape_of = [&](const char* spec, const char* reverse = "False") {
    return Run("reshape", {x}, {{"shape", spec}, {"reverse", reverse}}).shape();
  };
  CHECK(shape_of("(4,0,2)") == Shape{4, 3, 2});
  CHECK(shape_of("(6,-1)") == Shape{6, 4});
  CHECK(shape_of("(-2)") == Shape{2, 3, 4});
  CHECK(shape_of("(-3,4)") == Shape{6, 4});
  CHECK(shape_of("(-4,1,2,-2)") == Shape{1, 2, 3, 4});
  CHECK(shape_of("(2,-4,-1,3,4)") == Shape{2, 1, 3, 4});
  CHECK(shape_of("(-1,0)", "True") == Shape{6, 4});
  NDArray y = Run("Reshape", {x}, {{"shape", "(4,6)"}});
  CheckClose(y, Iota(24));
  CHECK(Contains(ErrorOfRun("reshape", {x}, {{"shape", "(5,-1)"}}),
                 "reshape: cannot reshape (2,3,4) to (5,-1)"));
  CHECK(Contains(ErrorOfRun("reshape", {x}, {{"shape", "(-1,-1)"}}), "more than one -1"));
  CHECK(Contains(ErrorOfRun("reshape", {x}, {}), "reshape: required parameter 'shape'"));
}

TEST_CASE("flatten, expand_dims and squeeze change only the shape") {
  NDArray x = IotaArray({2, 3, 4});
  NDArray f = Run("flatten", {x});
  CHECK(f.shape() == Shape{2, 12});
  CheckClose(f, Iota(24));
  CHECK(Run("Flatten", {IotaArray({5})}).shape() == Shape{5, 1});

  CHECK(Run("expand_dims", {x}, {{"axis", "1"}}).shape() == Shape{2, 1, 3, 4});
  CHECK(Run("expand_dims", {x}, {{"axis", "-1"}}).shape() == Shape{2, 3, 4, 1});
  CHECK(Run("expand_dims", {x}, {{"axis", "3"}}).shape() == Shape{2, 3, 4, 1});
  CHECK(Contains(ErrorOfRun("expand_dims", {x}, {{"axis", "4"}}), "expand_dims"));

  NDArray s = IotaArray({2, 1, 3, 1});
  CHECK(Run("squeeze", {s}).shape() == Shape{2, 3});
  CHECK(Run("squeeze", {s}, {{"axis", "(1,)"}}).shape() == Shape{2, 3, 1});
  CHECK(Run("squeeze", {s}, {{"axis", "(-1, 1)"}}).shape() == Shape{2, 3});
  CHECK(Run("squeeze", {IotaArray({1, 1})}).shape() == Shape{1});
  CheckClose(Run("squeeze", {s}), Iota(6));
  CHECK(Contains(ErrorOfRun("squeeze", {s}, {{"axis", "(0,)"}}),
                 "squeeze: cannot squeeze axis 0 of shape (2,1,3,1): its size is 2, not 1"));
  CHECK(Contains(ErrorOfRun("squeeze", {s}, {{"axis", "(5,)"}}), "squeeze"));
}

TEST_CASE("reshape-like ops copy every dtype and honour requests") {
  for (DType t : kAllTypes) {
    NDArray x = IotaArray({2, 3}, t);
    NDArray y = Run("reshape", {x}, {{"shape", "(3,2)"}});
    CHECK(y.dtype() == t);
    CheckClose(y, Iota(6));
  }
  NDArray b = Array({2, 2}, {1, 0, 1, 0}, DType::kBool);
  CheckClose(Run("flatten", {b}), {1, 0, 1, 0});

  // Add into an existing output.
  NDArray x = IotaArray({2, 3});
  NDArray out = Array({6}, {10, 10, 10, 10, 10, 10});
  std::vector<NDArray> outs{out};
  InvokeOptions add;
  add.req = {kAddTo};
  Invoke(MakeAttrs("reshape", {{"shape", "(-1,)"}}), {x}, &outs, add);
  CheckClose(out, {10, 11, 12, 13, 14, 15});
  // Output is a view of the input's own memory (another shape of it).
  std::vector<NDArray> alias{x.Reshape(Shape{3, 2})};
  Invoke(MakeAttrs("reshape", {{"shape", "(3,2)"}}), {x}, &alias);
  CheckClose(x, Iota(6));
  // kNullOp leaves the output alone.
  std::vector<NDArray> untouched{Array({6, 1}, {7, 7, 7, 7, 7, 7})};
  InvokeOptions null;
  null.req = {kNullOp};
  Invoke(MakeAttrs("flatten"), {IotaArray({6, 1})}, &untouched, null);
  CheckClose(untouched[0], {7, 7, 7, 7, 7, 7});
}

TEST_CASE("reshape-like gradients reshape the output gradient back") {
  CHECK(CheckNumericGradient("reshape", {{"shape", "(-1, 2)"}}, {Rand({2, 3, 2})}));
  CHECK(CheckNumericGradient("flatten", {}, {Rand({2, 3, 2})}));
  CHECK(CheckNumericGradient("expand_dims", {{"axis", "1"}}, {Rand({2, 3})}));
  CHECK(CheckNumericGradient("squeeze", {}, {Rand({2, 1, 3})}));
}

TEST_CASE("transpose permutes axes") {
  NDArray x = IotaArray({2, 3});
  NDArray t = Run("transpose", {x});
  CHECK(t.shape() == Shape{3, 2});
  CheckClose(t, {0, 3, 1, 4, 2, 5});

  NDArray y = IotaArray({2, 3, 4});
  NDArray a = Run("transpose", {y}, {{"axes", "(1,0,2)"}});
  CHECK(a.shape() == Shape{3, 2, 4});
  CheckClose(
      a, {0, 1, 2, 3, 12, 13, 14, 15, 4, 5, 6, 7, 16, 17, 18, 19, 8, 9, 10, 11, 20, 21, 22, 23});
  NDArray b = Run("transpose", {y}, {{"axes", "(2,0,1)"}});
  CHECK(b.shape() == Shape{4, 2, 3});
  CheckClose(
      b, {0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23});
  NDArray c = Run("transpose", {y}, {{"axes", "(-1,-3,-2)"}});
  CheckClose(c, b.ToVector());

  for (DType dt : kAllTypes) CheckClose(Run("transpose", {IotaArray({2, 3}, dt)}), t.ToVector());
  CheckClose(Run("transpose", {Array({2, 2}, {1, 1, 0, 0}, DType::kBool)}), {1, 0, 1, 0});

  CHECK(Contains(ErrorOfRun("transpose", {y}, {{"axes", "(0,1)"}}),
                 "transpose: axes (0,1) must list all 3 axes of the input"));
  CHECK(Contains(ErrorOfRun("transpose", {y}, {{"axes", "(0,1,1)"}}), "not a permutation"));
  CHECK(Contains(ErrorOfRun("transpose", {y}, {{"axes", "(0,1,3)"}}), "transpose"));
}

TEST_CASE("transpose of large arrays takes the blocked path and stays exact") {
  // Sizes that are not multiples of the tile, 2-D and batched.
  for (Shape s : {Shape{67, 131}, Shape{3, 45, 70}}) {
    NDArray x = IotaArray(s, DType::kFloat64);
    const bool two_d = s.ndim() == 2;
    NDArray t = two_d ? Run("transpose", {x}) : Run("transpose", {x}, {{"axes", "(0,2,1)"}});
    const int64_t batch = two_d ? 1 : s[0], r = s[s.ndim() - 2], c = s[s.ndim() - 1];
    std::vector<double> want(static_cast<size_t>(s.Size()));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < r; ++i)
        for (int64_t j = 0; j < c; ++j)
          want[static_cast<size_t>(b * r * c + j * r + i)] = double(b * r * c + i * c + j);
    CheckClose(t, want);
  }
}

TEST_CASE("transpose honours add and reads views") {
  NDArray base = IotaArray({4, 3});
  NDArray view = base.Slice(1, 3);  // rows 1..2: [[3,4,5],[6,7,8]]
  CheckClose(Run("transpose", {view}), {3, 6, 4, 7, 5, 8});
  NDArray out = Array({3, 2}, {1, 1, 1, 1, 1, 1});
  std::vector<NDArray> outs{out};
  InvokeOptions add;
  add.req = {kAddTo};
  Invoke(MakeAttrs("transpose"), {view}, &outs, add);
  CheckClose(out, {4, 7, 5, 8, 6, 9});
  // Writing into a view of a bigger array leaves the rest alone.
  NDArray big = Array({4, 2}, {9, 9, 9, 9, 9, 9, 9, 9});
  std::vector<NDArray> into_view{big.Slice(1, 3)};
  Invoke(MakeAttrs("transpose"), {IotaArray({2, 2})}, &into_view);
  CheckClose(big, {9, 9, 0, 2, 1, 3, 9, 9});
  CHECK(CheckNumericGradient("transpose", {{"axes", "(2,0,1)"}}, {Rand({2, 3, 4})}));
  CHECK(CheckNumericGradient("transpose", {}, {Rand({3, 4})}));
}

TEST_CASE("broadcast_to and broadcast_like repeat size-1 axes") {
  NDArray x = Array({1, 3}, {1, 2, 3});
  NDArray y = Run("broadcast_to", {x}, {{"shape", "(2,3)"}});
  CheckClose(y, {1, 2, 3, 1, 2, 3});
  CHECK(Run("broadcast_to", {x}, {{"shape", "(4,0)"}}).shape() == Shape{4, 3});
  NDArray col = Array({2, 1}, {5, 7});
  CheckClose(Run("broadcast_to", {col}, {{"shape", "(2,3)"}}), {5, 5, 5, 7, 7, 7});
  for (DType t : kAllTypes)
    CheckClose(Run("broadcast_to", {Array({2, 1}, {5, 7}, t)}, {{"shape", "(2,2)"}}), {5, 5, 7, 7});

  NDArray like = IotaArray({2, 3});
  CheckClose(Run("broadcast_like", {x, like}), {1, 2, 3, 1, 2, 3});
  NDArray z =
      Run("broadcast_like", {x, IotaArray({4, 5})}, {{"lhs_axes", "(0,)"}, {"rhs_axes", "(1,)"}});
  CHECK(z.shape() == Shape{5, 3});

  CHECK(Contains(ErrorOfRun("broadcast_to", {x}, {{"shape", "(2,4)"}}),
                 "broadcast_to: cannot broadcast (1,3) to (2,4): axis 1 has size 3, not 1 or 4"));
  CHECK(Contains(ErrorOfRun("broadcast_to", {x}, {{"shape", "(2,3,1)"}}),
                 "the numbers of axes differ"));
  CHECK(Contains(ErrorOfRun("broadcast_like", {x, IotaArray({2, 4})}, {}),
                 "broadcast_like: cannot broadcast (1,3) to (2,4)"));
  CHECK(Contains(ErrorOfRun("broadcast_like", {x, like}, {{"lhs_axes", "(0,)"}}),
                 "must both be given"));

  CHECK(CheckNumericGradient("broadcast_to", {{"shape", "(3,2,4)"}}, {Rand({3, 1, 1})}));
  CHECK(CheckNumericGradient("broadcast_to", {{"shape", "(2,0,3)"}}, {Rand({1, 4, 1})}));
  CHECK(CheckNumericGradient("broadcast_like", {}, {Rand({1, 3}), Rand({2, 3}, 2)},
                             {.check_inputs = {true, false}}));
}

TEST_CASE("tile, repeat and flip") {
  NDArray x = Array({2, 2}, {1, 2, 3, 4});
  CheckClose(Run("tile", {x}, {{"reps", "(2,)"}}), {1, 2, 1, 2, 3, 4, 3, 4});
  NDArray t = Run("tile", {x}, {{"reps", "(2,1,2)"}});
  CHECK(t.shape() == Shape{2, 2, 4});
  CheckClose(t, {1, 2, 1, 2, 3, 4, 3, 4, 1, 2, 1, 2, 3, 4, 3, 4});
  CheckClose(Run("tile", {x}, {{"reps", "(2,1)"}}), {1, 2, 3, 4, 1, 2, 3, 4});

  CheckClose(Run("repeat", {x}, {{"repeats", "2"}, {"axis", "1"}}), {1, 1, 2, 2, 3, 3, 4, 4});
  CheckClose(Run("repeat", {x}, {{"repeats", "2"}, {"axis", "0"}}), {1, 2, 1, 2, 3, 4, 3, 4});
  NDArray r = Run("repeat", {x}, {{"repeats", "2"}});
  CHECK(r.shape() == Shape{8});
  CheckClose(r, {1, 1, 2, 2, 3, 3, 4, 4});

  NDArray y = IotaArray({2, 3});
  CheckClose(Run("flip", {y}, {{"axis", "(1,)"}}), {2, 1, 0, 5, 4, 3});
  CheckClose(Run("flip", {y}, {{"axis", "(0,)"}}), {3, 4, 5, 0, 1, 2});
  CheckClose(Run("reverse", {y}, {{"axis", "(0,-1)"}}), {5, 4, 3, 2, 1, 0});

  for (DType dt : kAllTypes) {
    CheckClose(Run("tile", {Array({2}, {1, 2}, dt)}, {{"reps", "(2,)"}}), {1, 2, 1, 2});
    CheckClose(Run("repeat", {Array({2}, {1, 2}, dt)}, {{"repeats", "2"}}), {1, 1, 2, 2});
    CheckClose(Run("flip", {Array({2}, {1, 2}, dt)}, {{"axis", "(0,)"}}), {2, 1});
  }
  CheckClose(Run("flip", {Array({2}, {1, 0}, DType::kBool)}, {{"axis", "0"}}), {0, 1});

  CHECK(
      Contains(ErrorOfRun("tile", {x}, {{"reps", "(0,2)"}}), "tile: reps (0,2) must all be >= 1"));
  CHECK(
      Contains(ErrorOfRun("repeat", {x}, {{"repeats", "0"}}), "repeat: parameter 'repeats' is 0"));
  CHECK(Contains(ErrorOfRun("repeat", {x}, {{"repeats", "2"}, {"axis", "2"}}), "repeat"));
  CHECK(Contains(ErrorOfRun("flip", {y}, {{"axis", "(1,1)"}}), "flip: axis 1 is given twice"));
  CHECK(Contains(ErrorOfRun("flip", {y}, {{"axis", "(2,)"}}), "flip"));

  CHECK(CheckNumericGradient("tile", {{"reps", "(2,1,3)"}}, {Rand({2, 2})}));
  CHECK(CheckNumericGradient("repeat", {{"repeats", "3"}, {"axis", "0"}}, {Rand({2, 3})}));
  CHECK(CheckNumericGradient("repeat", {{"repeats", "2"}}, {Rand({2, 3})}));
  CHECK(CheckNumericGradient("flip", {{"axis", "(0,2)"}}, {Rand({2, 3, 2})}));
}

TEST_CASE("concat joins along any axis") {
  NDArray a = Array({1, 2}, {1, 2}), b = Array({2, 2}, {3, 4, 5, 6});
  NDArray c = Run("concat", {a, b}, {{"num_args", "2"}, {"dim", "0"}});
  CHECK(c.shape() == Shape{3, 2});
  CheckClose(c, {1, 2, 3, 4, 5, 6});
  NDArray p = IotaArray({2, 1}), q = IotaArray({2, 3}, DType::kFloat32, 10);
  CheckClose(Run("Concat", {p, q, p}, {{"num_args", "3"}, {"dim", "-1"}}),
             {0, 10, 11, 12, 0, 1, 13, 14, 15, 1});
  for (DType t : kAllTypes)
    CheckClose(Run("concat", {Array({1}, {1}, t), Array({2}, {2, 3}, t)},
                   {{"num_args", "2"}, {"dim", "0"}}),
               {1, 2, 3});
  // Add into an output.
  std::vector<NDArray> outs{Array({3, 2}, {1, 1, 1, 1, 1, 1})};
  InvokeOptions add;
  add.req = {kAddTo};
  Invoke(MakeAttrs("concat", {{"num_args", "2"}, {"dim", "0"}}), {a, b}, &outs, add);
  CheckClose(outs[0], {2, 3, 4, 5, 6, 7});

  CHECK(Contains(ErrorOfRun("concat", {a, IotaArray({2, 3})}, {{"num_args", "2"}, {"dim", "0"}}),
                 "concat: input 1 has shape (2,3), whose axis 1 differs from the size 2 of the "
                 "others (only axis 0 may differ)"));
  CHECK(
      Contains(ErrorOfRun("concat", {a, b}, {{"num_args", "3"}}), "concat: takes 3 inputs, got 2"));
  CHECK(Contains(ErrorOfRun("concat", {a, b}, {{"num_args", "2"}, {"dim", "2"}}), "concat"));
  CHECK(CheckNumericGradient("concat", {{"num_args", "3"}, {"dim", "1"}},
                             {Rand({2, 1}), Rand({2, 3}, 2), Rand({2, 2}, 3)}));
}

TEST_CASE("stack adds an axis, split cuts one") {
  NDArray a = Array({2}, {1, 2}), b = Array({2}, {3, 4});
  NDArray s0 = Run("stack", {a, b}, {{"num_args", "2"}});
  CHECK(s0.shape() == Shape{2, 2});
  CheckClose(s0, {1, 2, 3, 4});
  CheckClose(Run("stack", {a, b}, {{"num_args", "2"}, {"axis", "1"}}), {1, 3, 2, 4});
  CheckClose(Run("stack", {a, b}, {{"num_args", "2"}, {"axis", "-1"}}), {1, 3, 2, 4});
  CHECK(Contains(ErrorOfRun("stack", {a, IotaArray({3})}, {{"num_args", "2"}}),
                 "stack: input 1 has shape (3,) but input 0 has (2,)"));

  NDArray x = IotaArray({2, 4});
  std::vector<NDArray> parts = Invoke("split", {x}, {{"num_outputs", "2"}, {"axis", "1"}});
  REQUIRE(parts.size() == 2);
  CHECK(parts[0].shape() == Shape{2, 2});
  CheckClose(parts[0], {0, 1, 4, 5});
  CheckClose(parts[1], {2, 3, 6, 7});
  std::vector<NDArray> rows =
      Invoke("split", {x}, {{"num_outputs", "2"}, {"axis", "0"}, {"squeeze_axis", "1"}});
  CHECK(rows[1].shape() == Shape{4});
  CheckClose(rows[1], {4, 5, 6, 7});
  for (DType t : kAllTypes)
    CheckClose(Invoke("split", {IotaArray({4}, t)}, {{"num_outputs", "2"}, {"axis", "0"}})[1],
               {2, 3});
  CHECK(Contains(ErrorOfRun("split", {x}, {{"num_outputs", "3"}}),
                 "split: cannot split axis 1 of shape (2,4) into 3 equal parts"));
  CHECK(Contains(ErrorOfRun("split", {x}, {{"num_outputs", "2"}, {"squeeze_axis", "1"}}),
                 "squeeze_axis needs num_outputs (2) equal to the size of axis 1"));

  CHECK(CheckNumericGradient("stack", {{"num_args", "3"}, {"axis", "1"}},
                             {Rand({2, 3}), Rand({2, 3}, 2), Rand({2, 3}, 3)}));
  CHECK(CheckNumericGradient("split", {{"num_outputs", "3"}, {"axis", "1"}}, {Rand({2, 6})}));
  CHECK(CheckNumericGradient("split", {{"num_outputs", "2"}, {"axis", "0"}, {"squeeze_axis", "1"}},
                             {Rand({2, 3})}));
}

TEST_CASE("slice follows Python's rules") {
  NDArray x = IotaArray({3, 4});  // [[0..3],[4..7],[8..11]]
  NDArray a = Run("slice", {x}, {{"begin", "(0,1)"}, {"end", "(2,3)"}});
  CHECK(a.shape() == Shape{2, 2});
  CheckClose(a, {1, 2, 5, 6});
  CheckClose(Run("slice", {x}, {{"begin", "(None,)"}, {"end", "(None,)"}, {"step", "(-1,)"}}),
             {8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3});
  CheckClose(
      Run("slice", {x}, {{"begin", "(-1, None)"}, {"end", "(None, None)"}, {"step", "(1, 2)"}}),
      {8, 10});
  CheckClose(Run("slice", {x}, {{"begin", "(1, 3)"}, {"end", "(100, 0)"}, {"step", "(1, -2)"}}),
             {7, 5, 11, 9});
  CheckClose(Run("crop", {x}, {{"begin", "(2,)"}, {"end", "(3,)"}}), {8, 9, 10, 11});
  for (DType t : kAllTypes)
    CheckClose(Run("slice", {IotaArray({4}, t)}, {{"begin", "(1,)"}, {"end", "(3,)"}}), {1, 2});

  CHECK(Contains(ErrorOfRun("slice", {x}, {{"begin", "(2,)"}, {"end", "(1,)"}}),
                 "slice: slice [2:1:1] of axis 0 of shape (3,4) is empty"));
  CHECK(Contains(ErrorOfRun("slice", {x}, {{"begin", "(0,)"}, {"end", "(1,)"}, {"step", "(0,)"}}),
                 "slice: step is 0 on axis 0"));
  CHECK(Contains(ErrorOfRun("slice", {x}, {{"begin", "(0,0,0)"}, {"end", "(1,1,1)"}}),
                 "has more entries than the axes of (3,4)"));
  CHECK(Contains(ErrorOfRun("slice", {x}, {{"begin", "(0,0)"}, {"end", "(1,)"}}),
                 "have different lengths"));
  CHECK(Contains(ErrorOfRun("slice", {x}, {{"begin", "(x,)"}, {"end", "(1,)"}}),
                 "slice: parameter 'begin' got '(x,)'"));

  CHECK(CheckNumericGradient("slice",
                             {{"begin", "(1, None)"}, {"end", "(3, None)"}, {"step", "(1, -2)"}},
                             {Rand({3, 5})}));
  // The gradient adds into an existing one.
  NDArray g =
      Run("_backward_slice", {Array({1, 2}, {1, 2}), x}, {{"begin", "(1,1)"}, {"end", "(2,3)"}});
  CheckClose(g, {0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0});
  std::vector<NDArray> acc{Array({3, 4}, std::vector<double>(12, 1))};
  InvokeOptions add;
  add.req = {kAddTo};
  Invoke(MakeAttrs("_backward_slice", {{"begin", "(1,1)"}, {"end", "(2,3)"}}),
         {Array({1, 2}, {1, 2}), x}, &acc, add);
  CheckClose(acc[0], {1, 1, 1, 1, 1, 2, 3, 1, 1, 1, 1, 1});
}

TEST_CASE("slice_axis and slice_like") {
  NDArray x = IotaArray({2, 3});
  CheckClose(Run("slice_axis", {x}, {{"axis", "1"}, {"begin", "1"}, {"end", "None"}}),
             {1, 2, 4, 5});
  CheckClose(Run("slice_axis", {x}, {{"axis", "-1"}, {"begin", "-2"}, {"end", "-1"}}), {1, 4});
  CheckClose(Run("slice_axis", {x}, {{"axis", "0"}, {"begin", "1"}, {"end", "2"}}), {3, 4, 5});
  CHECK(Contains(ErrorOfRun("slice_axis", {x}, {{"axis", "1"}, {"begin", "0"}, {"end", "4"}}),
                 "slice_axis: begin 0 and end 4 are out of range for axis 1 of shape (2,3)"));
  CHECK(Contains(ErrorOfRun("slice_axis", {x}, {{"axis", "2"}, {"begin", "0"}, {"end", "1"}}),
                 "slice_axis"));

  NDArray big = IotaArray({3, 4});
  CheckClose(Run("slice_like", {big, IotaArray({2, 3})}), {0, 1, 2, 4, 5, 6});
  CheckClose(Run("slice_like", {big, IotaArray({2, 2})}, {{"axes", "(1,)"}}), {0, 1, 4, 5, 8, 9});
  CHECK(Contains(ErrorOfRun("slice_like", {x, big}, {}),
                 "slice_like: shape_like (3,4) is larger than data (2,3) on axis 0"));
  CHECK(Contains(ErrorOfRun("slice_like", {x, IotaArray({2})}, {}), "the same number of axes"));

  CHECK(CheckNumericGradient("slice_axis", {{"axis", "1"}, {"begin", "1"}, {"end", "3"}},
                             {Rand({2, 4})}));
  CHECK(CheckNumericGradient("slice_like", {{"axes", "(0,)"}}, {Rand({3, 2}), Rand({2, 5}, 2)},
                             {.check_inputs = {true, false}}));
}
