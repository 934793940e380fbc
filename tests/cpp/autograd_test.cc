// Autograd: recorded calls, backward with every grad_req, head gradients,
// freed graphs, and the recording modes.
#include <doctest/doctest.h>

#include "engine/autograd/autograd.h"
#include "engine/ndarray/imperative.h"
#include "op_test_util.h"

using namespace tessera;
using tessera::test::Array;
using tessera::test::CheckClose;

namespace {

// Runs fn with recording (and training) on, restoring the modes after.
template <typename F>
auto Recorded(F fn) {
  const bool rec = autograd::SetRecording(true), train = autograd::SetTraining(true);
  auto result = fn();
  autograd::SetRecording(rec);
  autograd::SetTraining(train);
  return result;
}

}  // namespace

TEST_CASE("backward of a recorded chain, with a shared input") {
  NDArray x = Array({3}, {1, 2, 3});
  autograd::AttachGrad(&x);
  // y = sum(x * x + x)  ->  dy/dx = 2x + 1
  NDArray y = Recorded([&] {
    NDArray sq = Invoke("elemwise_mul", {x, x})[0];
    return Invoke("sum", {Invoke("elemwise_add", {sq, x})[0]})[0];
  });
  autograd::Backward({y});
  CHECK(CheckClose(autograd::GetGrad(x), {3, 5, 7}));
  CHECK_THROWS_WITH_AS(autograd::Backward({y}), doctest::Contains("freed"), Error);
}

TEST_CASE("grad_req add and null; head gradients") {
  NDArray a = Array({2}, {1, 2}), b = Array({2}, {3, 4});
  autograd::AttachGrad(&a, kAddTo);
  autograd::AttachGrad(&b, kNullOp);
  for (int i = 0; i < 2; ++i) {
    NDArray y = Recorded([&] { return Invoke("elemwise_mul", {a, b})[0]; });
    autograd::Backward({y}, {Array({2}, {1, 10})});
  }
  CHECK(CheckClose(autograd::GetGrad(a), {6, 80}));
  CHECK(CheckClose(autograd::GetGrad(b), {0, 0}));
}

TEST_CASE("calls outside record, and arrays without attach_grad, are not recorded") {
  NDArray x = Array({2}, {1, 2});
  autograd::AttachGrad(&x);
  NDArray y = Invoke("elemwise_mul", {x, x})[0];
  CHECK(y.ag_node() == nullptr);
  NDArray c = Array({2}, {5, 6});
  NDArray z = Recorded([&] { return Invoke("elemwise_mul", {c, c})[0]; });
  CHECK(z.ag_node() == nullptr);
  CHECK_THROWS_WITH_AS(autograd::Backward({z}), doctest::Contains("record"), Error);
  CHECK(!autograd::IsRecording());
}

TEST_CASE("training mode reaches the ops; views are not recorded values") {
  CHECK(!ThreadRecordState().training);
  Recorded([&] {
    CHECK(ThreadRecordState().training);
    return 0;
  });
  NDArray x = Array({2, 2}, {1, 2, 3, 4});
  autograd::AttachGrad(&x);
  CHECK(x.Reshape(Shape{4}).ag_node() == nullptr);
  CHECK(x.Detach().ag_node() == nullptr);
}
