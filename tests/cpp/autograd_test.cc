// Autograd: recorded calls, backward with every grad_req, head gradients,
// freed graphs, and the recording modes.
#include <doctest/doctest.h>

#include <cmath>

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

TEST_CASE("Invoke writes a donated input in place only where the op allows it") {
  auto relu = MakeAttrs("Activation", {{"act_type", "relu"}});
  NDArray x = Array({4}, {-1, 2, -3, 4});
  InvokeOptions opt;
  opt.donated = 1;
  std::vector<NDArray> out;
  Invoke(relu, {x}, &out, opt);
  CHECK(out[0].SameChunk(x));  // Activation may write its input's place
  CHECK(CheckClose(out[0], {0, 2, 0, 4}));
  // Not donated: new memory, the input untouched.
  NDArray a = Array({4}, {-1, 2, -3, 4});
  std::vector<NDArray> fresh;
  Invoke(relu, {a}, &fresh);
  CHECK(!fresh[0].SameChunk(a));
  CHECK(CheckClose(a, {-1, 2, -3, 4}));
  // Another shape (sum), or an op without FInplaceOption (dot): not taken.
  NDArray m = Array({2, 2}, {1, 2, 3, 4});
  std::vector<NDArray> s;
  Invoke(MakeAttrs("sum"), {m}, &s, opt);
  CHECK(!s[0].SameChunk(m));
  CHECK(CheckClose(s[0], {10}));
  InvokeOptions both;
  both.donated = 3;
  std::vector<NDArray> d;
  Invoke(MakeAttrs("dot"), {m, m}, &d, both);
  CHECK(!d[0].SameChunk(m));
  CHECK(CheckClose(d[0], {7, 10, 15, 22}));
  // A view of part of an array is never written in place.
  NDArray big = Array({2, 2}, {-1, 2, -3, 4});
  NDArray row = big.At(1);
  std::vector<NDArray> r;
  Invoke(relu, {row}, &r, opt);
  CHECK(!r[0].SameChunk(big));
  CHECK(CheckClose(big, {-1, 2, -3, 4}));
}

TEST_CASE("backward gives an intermediate gradient away only at its last read") {
  // y = sum(tanh(add_n(sigmoid(x), tanh(x)))): add_n's gradient is the same
  // array for both of its inputs, read by two backward nodes that could each
  // write it in place; the first must leave it to the second.
  std::vector<double> xs{-1.5, -0.2, 0.3, 1.1, 2.0};
  NDArray x = Array({5}, xs);
  autograd::AttachGrad(&x);
  auto act = [](const NDArray& a, const char* type) {
    return Invoke("Activation", {a}, {{"act_type", type}})[0];
  };
  NDArray y = Recorded([&] {
    NDArray s = Invoke("add_n", {act(x, "sigmoid"), act(x, "tanh")}, {{"num_args", "2"}})[0];
    return Invoke("sum", {act(s, "tanh")})[0];
  });
  autograd::Backward({y});
  std::vector<double> want;
  for (double v : xs) {
    const double sg = 1 / (1 + std::exp(-v)), t = std::tanh(v), u = std::tanh(sg + t);
    want.push_back((1 - u * u) * (sg * (1 - sg) + 1 - t * t));
  }
  CHECK(CheckClose(autograd::GetGrad(x), want, 1e-5, 1e-5));
}
