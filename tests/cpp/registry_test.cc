// The operator registry: parameters, inference, imperative invocation, and
// the reference's quadratic op end to end.
#include <doctest/doctest.h>

#include "engine/ndarray/imperative.h"
#include "engine/op/op_attr_types.h"
#include "tests/cpp/op_test_util.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using tessera::test::Array;
using tessera::test::CheckClose;
using tessera::test::Contains;
using tessera::test::ErrorOf;

TEST_CASE("quadratic computes a x^2 + b x + c on every float dtype") {
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    NDArray x = Array({2, 2}, {1, 2, 3, 4}, t);
    NDArray y = Invoke("quadratic", {x}, {{"a", "1"}, {"b", "2"}, {"c", "3"}})[0];
    CHECK(y.dtype() == t);
    CHECK(y.shape() == Shape{2, 2});
    CheckClose(y, {6, 11, 18, 27});
  }
}

TEST_CASE("quadratic honours write, add and in-place requests") {
  NDArray x = Array({3}, {1, 2, 3});
  NDArray out = Array({3}, {10, 20, 30});
  std::vector<NDArray> outs{out};
  InvokeOptions opt;
  opt.req = {kAddTo};
  Invoke(MakeAttrs("quadratic", {{"a", "1"}}), {x}, &outs, opt);
  CheckClose(out, {11, 24, 39});
  // out = x: written in place, the op allows it.
  std::vector<NDArray> self{x};
  Invoke(MakeAttrs("quadratic", {{"a", "1"}, {"c", "1"}}), {x}, &self);
  CheckClose(x, {2, 5, 10});
}

TEST_CASE("quadratic gradient matches finite differences") {
  CHECK(test::CheckNumericGradient("quadratic", {{"a", "1.5"}, {"b", "-2"}, {"c", "3"}},
                                   {test::RandomArray({3, 4}, -2, 2)}));
}

TEST_CASE("parameter errors name the op and the field") {
  NDArray x = Array({2}, {1, 2});
  CHECK(Contains(ErrorOf([&] {
                   Invoke("quadratic", {x}, {{"d", "1"}});
                 }),
                 "quadratic: unknown parameter 'd' (parameters: a, b, c)"));
  CHECK(Contains(ErrorOf([&] {
                   Invoke("quadratic", {x}, {{"a", "x"}});
                 }),
                 "quadratic: parameter 'a' got 'x', expected float"));
  CHECK(Contains(ErrorOf([&] { Invoke("Cast", {x}); }),
                 "Cast: required parameter 'dtype' is missing"));
  CHECK(Contains(ErrorOf([&] {
                   Invoke("Cast", {x}, {{"dtype", "float128"}});
                 }),
                 "Cast: parameter 'dtype' got 'float128'"));
  CHECK(Contains(ErrorOf([&] { Invoke("no_such_op", {x}); }), "unknown operator 'no_such_op'"));
  CHECK(Contains(ErrorOf([&] { Invoke("quadratic", {x, x}); }), "quadratic: takes 1 input, got 2"));
}

TEST_CASE("Cast converts between every pair of dtypes") {
  NDArray x = Array({4}, {-1.75, 0, 2.5, 100});
  CheckClose(x.AsType(DType::kInt32), {-1, 0, 2, 100});
  CheckClose(x.AsType(DType::kBool), {1, 0, 1, 1});
  CheckClose(x.AsType(DType::kFloat16), {-1.75, 0, 2.5, 100});
  CheckClose(x.AsType(DType::kInt64).AsType(DType::kFloat64), {-1, 0, 2, 100});
  CHECK(
      test::CheckNumericGradient("Cast", {{"dtype", "float64"}}, {test::RandomArray({5}, -1, 1)}));
}

TEST_CASE("an op's attributes keep their address while other ops register") {
  // Pushed ops and the per-call memo of Invoke point at registered kernels;
  // registering more ops (a plugin) must not move them.
  const op::Op* add = op::Op::Get("elemwise_add");
  const auto& fcompute = op::Op::GetAttr<op::FCompute>(op::kFComputeCPU);
  const op::FCompute* before = fcompute.find(add);
  REQUIRE(before != nullptr);
  for (int i = 0; i < 300; ++i)
    op::Op::Register("registry_test_growth_" + std::to_string(i))
        .set_attr<op::FCompute>(
            op::kFComputeCPU,
            [](const op::NodeAttrs&, const op::OpContext&, const std::vector<TBlob>&,
               const std::vector<OpReqType>&, const std::vector<TBlob>&) {});
  CHECK(fcompute.find(add) == before);
  CHECK(fcompute.find(op::Op::Get("registry_test_growth_299")) != nullptr);
  // The sum still runs through it.
  NDArray a = Array({2}, {1, 2}), b = Array({2}, {3, 4});
  CheckClose(Invoke("elemwise_add", {a, b}, {})[0], {4, 6});
}
