// Indexing operators: take, pick, gather_nd, one_hot, where. Values against
// hand-written references, index dtypes, modes, requests, numeric gradients
// (scatter-add for repeated indices) and the errors for bad shapes,
// parameters and out-of-range indices.
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
// Only the data input is differentiable; indices get zero gradients.
const test::GradCheckOptions kDataOnly{.check_inputs = {true, false}};

}  // namespace

TEST_CASE("take selects slices along an axis") {
  NDArray a = Array({3, 2}, {1, 2, 3, 4, 5, 6});
  NDArray t = Run("take", {a, Array({2}, {0, 2})});
  CHECK(t.shape() == Shape{2, 2});
  CheckClose(t, {1, 2, 5, 6});
  // Index arrays keep their shape: (1,2) indices on axis 0 of (3,2) give (1,2,2).
  NDArray t2 = Run("take", {a, Array({1, 2}, {2, 1})});
  CHECK(t2.shape() == Shape{1, 2, 2});
  CheckClose(t2, {5, 6, 3, 4});
  NDArray t3 = Run("take", {a, Array({3}, {1, 1, 0})}, {{"axis", "1"}});
  CHECK(t3.shape() == Shape{3, 3});
  CheckClose(t3, {2, 2, 1, 4, 4, 3, 6, 6, 5});
  CheckClose(Run("take", {a, Array({1}, {1})}, {{"axis", "-1"}}), {2, 4, 6});

  // Modes: clip (default), wrap, raise (negative counts from the end).
  NDArray wild = Array({4}, {-1, 3, 5, -4});
  CheckClose(Run("take", {a, wild}, {{"axis", "1"}}), {1, 2, 2, 1, 3, 4, 4, 3, 5, 6, 6, 5});
  CheckClose(Run("take", {Array({3}, {10, 11, 12}), wild}, {{"mode", "wrap"}}), {12, 10, 12, 12});
  CheckClose(Run("take", {Array({3}, {10, 11, 12}), Array({2}, {-1, 2})}, {{"mode", "raise"}}),
             {12, 12});

  // Every data dtype, and indices of several dtypes (fractions truncate).
  for (DType t : kAllTypes)
    CheckClose(Run("take", {IotaArray({4}, t), Array({2}, {3, 1})}), {3, 1});
  for (DType it : {DType::kInt32, DType::kInt64, DType::kUint8, DType::kFloat16, DType::kFloat64})
    CheckClose(Run("take", {IotaArray({4}), Array({2}, {2, 1}, it)}), {2, 1});
  CheckClose(Run("take", {IotaArray({4}), Array({2}, {2.7, 0.2})}), {2, 0});

  // Add into an output.
  std::vector<NDArray> outs{Array({2}, {10, 20})};
  InvokeOptions add;
  add.req = {kAddTo};
  Invoke(MakeAttrs("take"), {IotaArray({4}), Array({2}, {3, 1})}, &outs, add);
  CheckClose(outs[0], {13, 21});
}

TEST_CASE("take errors: shapes and parameters at the call, indices at the wait") {
  NDArray a = IotaArray({5, 3});
  CHECK(Contains(ErrorOf([&] { Run("take", {a, Array({1}, {0})}, {{"axis", "2"}}); }), "take"));
  CHECK(
      Contains(ErrorOf([&] {
                 Run("take", {a, Array({1}, {0})}, {{"mode", "nearest"}});
               }),
               "take: parameter 'mode' got 'nearest', expected one of {'clip', 'wrap', 'raise'}"));
  NDArray bad = Run("take", {a, Array({3}, {0, 7, 1})}, {{"mode", "raise"}});  // returns at once
  const std::string err = ErrorOf([&] { bad.WaitToRead(); });
  CHECK(Contains(err, "take"));
  CHECK(Contains(err, "index 7 is out of range for axis 0 of shape (5,3) (valid: -5 to 4)"));
  // The engine stays usable.
  CheckClose(Run("take", {a, Array({1}, {4})}, {{"mode", "raise"}}), {12, 13, 14});
}

TEST_CASE("take gradient adds repeated indices") {
  CHECK(CheckNumericGradient("take", {}, {Rand({4, 3}), Array({3}, {1, 3, 1}, DType::kFloat64)},
                             kDataOnly));
  CHECK(CheckNumericGradient("take", {{"axis", "1"}, {"mode", "wrap"}},
                             {Rand({2, 3, 2}), Array({2, 2}, {0, 4, -1, 0}, DType::kFloat64)},
                             kDataOnly));
  NDArray g = Run("_backward_take", {Array({3}, {1, 2, 4}), IotaArray({4}), Array({3}, {1, 3, 1})});
  CheckClose(g, {0, 5, 0, 2});
}

TEST_CASE("pick chooses one element per row") {
  NDArray x = Array({3, 2}, {1, 2, 3, 4, 5, 6});
  CheckClose(Run("pick", {x, Array({3}, {0, 1, 0})}, {{"axis", "1"}}), {1, 4, 5});
  CheckClose(Run("pick", {x, Array({3}, {0, 1, 0})}), {1, 4, 5});
  NDArray k = Run("pick", {x, Array({3, 1}, {1, 1, 0})}, {{"keepdims", "1"}});
  CHECK(k.shape() == Shape{3, 1});
  CheckClose(k, {2, 4, 5});
  CheckClose(Run("pick", {x, Array({2}, {2, 0})}, {{"axis", "0"}}), {5, 2});
  CheckClose(Run("pick", {x, Array({3}, {-1, 5, 2})}, {{"axis", "1"}}), {1, 4, 6});
  CheckClose(Run("pick", {x, Array({3}, {-1, 5, 2})}, {{"axis", "1"}, {"mode", "wrap"}}),
             {2, 4, 5});
  for (DType t : kAllTypes)
    CheckClose(Run("pick", {IotaArray({2, 2}, t), Array({2}, {1, 0})}), {1, 2});
  CHECK(Contains(ErrorOfRun("pick", {x, Array({2}, {0, 1})}, {}),
                 "pick: index has shape (2,) but data (3,2) needs (3,) (or (3,1))"));
  CHECK(Contains(ErrorOfRun("pick", {x, Array({3}, {0, 1, 0})}, {{"mode", "raise"}}),
                 "pick: parameter 'mode' got 'raise'"));
  CHECK(CheckNumericGradient("pick", {{"axis", "1"}},
                             {Rand({3, 4}), Array({3}, {3, 0, 2}, DType::kFloat64)}, kDataOnly));
  CHECK(CheckNumericGradient("pick", {{"axis", "0"}, {"keepdims", "1"}},
                             {Rand({3, 2}), Array({1, 2}, {2, 0}, DType::kFloat64)}, kDataOnly));
}

TEST_CASE("gather_nd reads index tuples") {
  NDArray x = Array({2, 2}, {1, 2, 3, 4});
  CheckClose(Run("gather_nd", {x, Array({2, 2}, {1, 0, 0, 1})}), {3, 2});
  NDArray rows = Run("gather_nd", {x, Array({1, 2}, {1, 0})});
  CHECK(rows.shape() == Shape{2, 2});
  CheckClose(rows, {3, 4, 1, 2});
  NDArray y = IotaArray({2, 3, 2});
  NDArray g = Run("gather_nd", {y, Array({2, 2}, {1, -2, 2, 0})});
  CHECK(g.shape() == Shape{2, 2});
  CheckClose(g, {10, 11, 0, 1});
  CHECK(Run("gather_nd", {y, Array({3}, {1, 1, 1})}).shape() == Shape{1});
  for (DType t : kAllTypes)
    CheckClose(Run("gather_nd", {IotaArray({3}, t), Array({1, 2}, {2, 0})}), {2, 0});
  CHECK(Contains(ErrorOfRun("gather_nd", {x, Array({3, 1}, {0, 0, 0})}, {}),
                 "gather_nd: indices (3,1) index 3 axes but data (2,2) has 2"));
  CHECK(Contains(ErrorOfRun("gather_nd", {x, Array({2, 1}, {0, 2})}, {}),
                 "gather_nd: index 2 is out of range for axis 1 of data (2,2)"));
  CHECK(CheckNumericGradient("gather_nd", {},
                             {Rand({3, 2}), Array({1, 3}, {2, 0, 2}, DType::kFloat64)}, kDataOnly));
}

TEST_CASE("one_hot expands class numbers") {
  NDArray o = Run("one_hot", {Array({3}, {1, 0, 2})}, {{"depth", "3"}});
  CHECK(o.shape() == Shape{3, 3});
  CHECK(o.dtype() == DType::kFloat32);
  CheckClose(o, {0, 1, 0, 1, 0, 0, 0, 0, 1});
  NDArray p = Run("one_hot", {Array({2, 1}, {3, -1}, DType::kInt32)},
                  {{"depth", "3"}, {"on_value", "5"}, {"off_value", "-2"}, {"dtype", "int32"}});
  CHECK(p.shape() == Shape{2, 1, 3});
  CHECK(p.dtype() == DType::kInt32);
  CheckClose(p, {-2, -2, -2, -2, -2, -2});
  for (DType t : kAllTypes)
    CheckClose(Run("one_hot", {Array({1}, {1}, t)}, {{"depth", "2"}, {"dtype", DTypeName(t)}}),
               {0, 1});
  CHECK(Contains(ErrorOfRun("one_hot", {Array({1}, {1})}, {{"depth", "0"}}),
                 "one_hot: parameter 'depth' is 0, must be >= 1"));
  CHECK(Contains(ErrorOfRun("one_hot", {Array({1}, {1})}, {}),
                 "one_hot: required parameter 'depth'"));
}

TEST_CASE("where chooses between x and y") {
  NDArray x = Array({2, 2}, {1, 2, 3, 4}), y = Array({2, 2}, {5, 6, 7, 8});
  CheckClose(Run("where", {Array({2, 2}, {1, 0, 0, 2}), x, y}), {1, 6, 7, 4});
  CheckClose(Run("where", {Array({2}, {1, 0}), x, y}), {1, 2, 7, 8});
  CheckClose(Run("where", {Array({2, 2}, {0, 1, 1, 0}, DType::kBool), x, y}), {5, 2, 3, 8});
  for (DType t : kAllTypes)
    CheckClose(Run("where", {Array({2}, {0, 3}, t), Array({2}, {1, 2}, t), Array({2}, {3, 4}, t)}),
               {3, 2});
  // In place into x.
  std::vector<NDArray> self{x};
  Invoke(MakeAttrs("where"), {Array({2, 2}, {0, 1, 0, 1}), x, y}, &self);
  CheckClose(x, {5, 2, 7, 4});

  CHECK(Contains(ErrorOfRun("where", {Array({3}, {1, 0, 1}), x, y}, {}),
                 "where: condition has shape (3,) but x and y have (2,2)"));
  CHECK(Contains(ErrorOfRun("where", {Array({2}, {1, 0}), x, IotaArray({2, 3})}, {}),
                 "where: y has shape (2,3) but (2,2) is required"));
  CHECK(Contains(ErrorOfRun("where", {Array({2}, {1, 0}), x, IotaArray({2, 2}, DType::kInt32)}, {}),
                 "where: x has dtype float32 but y has int32"));
  CHECK(CheckNumericGradient(
      "where", {},
      {Array({2, 3}, {1, 0, 1, 0, 0, 1}, DType::kFloat64), Rand({2, 3}), Rand({2, 3}, 2)},
      {.check_inputs = {false, true, true}}));
  CHECK(CheckNumericGradient(
      "where", {}, {Array({3}, {0, 1, 1}, DType::kFloat64), Rand({3, 2}), Rand({3, 2}, 2)},
      {.check_inputs = {false, true, true}}));
}
