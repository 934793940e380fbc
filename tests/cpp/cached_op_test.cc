// CachedOp: a bound graph called like one op. Forward against the executor,
// gradients under autograd against the same ops recorded one by one,
// executors reused per signature and kept apart for pending backwards, the
// gradient written into a parameter's own buffer, the errors.
#include <doctest/doctest.h>

#include <memory>

#include "engine/autograd/autograd.h"
#include "engine/autograd/cached_op.h"
#include "engine/graph/executor.h"
#include "engine/ndarray/imperative.h"
#include "tests/cpp/op_test_util.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using autograd::CachedOp;
using graph::Symbol;
using test::Array;
using test::CheckClose;

namespace {

Symbol Apply(const char* op, const std::vector<Symbol>& args, op::ParamDict params = {}) {
  return Symbol::Create(op::Op::Get(op), std::move(params), args, {}, "");
}

// tanh(FullyConnected(data, w, b)): inputs data, w, b.
Symbol Layer() {
  return Apply("tanh",
               {Apply("FullyConnected",
                      {Symbol::Variable("data"), Symbol::Variable("w"), Symbol::Variable("b")},
                      {{"num_hidden", "2"}})});
}

// The same layer called op by op.
NDArray Imperative(const NDArray& x, const NDArray& w, const NDArray& b) {
  NDArray fc = Invoke("FullyConnected", {x, w, b}, {{"num_hidden", "2"}})[0];
  return Invoke("tanh", {fc})[0];
}

struct Recording {
  bool rec = autograd::SetRecording(true), train = autograd::SetTraining(true);
  ~Recording() {
    autograd::SetRecording(rec);
    autograd::SetTraining(train);
  }
};

std::vector<double> Values(const NDArray& a) {
  NDArray c = a.CopyTo(Context::CPU());
  c.WaitToRead();
  std::vector<double> v(c.shape().Size());
  const float* p = c.data().dptr<float>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = p[i];
  return v;
}

}  // namespace

TEST_CASE("forward equals the op-by-op call; executors are reused per shape") {
  auto op = std::make_shared<CachedOp>(Layer(), std::vector<std::string>{"data"});
  REQUIRE(op->input_names() == std::vector<std::string>{"data", "w", "b"});
  NDArray x = Array({3, 4}, {1, 2, 3, 4, -1, 0, 1, 2, 0.5, 0.5, 0.5, 0.5});
  NDArray w = Array({2, 4}, {0.1, -0.2, 0.3, 0.1, 0.2, 0.2, -0.1, 0.0});
  NDArray b = Array({2}, {0.5, -0.5});
  NDArray y = op->Forward({x, w, b})[0];
  CHECK(CheckClose(y, Values(Imperative(x, w, b))));
  // A second call with other data: the first output keeps its values.
  NDArray x2 = Array({3, 4}, {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2});
  NDArray y2 = op->Forward({x2, w, b})[0];
  CHECK(CheckClose(y, Values(Imperative(x, w, b))));
  CHECK(CheckClose(y2, Values(Imperative(x2, w, b))));
  CHECK(op->num_executors() == 1);
  op->Forward({Array({1, 4}, {1, 1, 1, 1}), w, b});
  CHECK(op->num_executors() == 2);
}

TEST_CASE("recorded: gradients equal those of the op-by-op graph, written in the buffers") {
  auto op = std::make_shared<CachedOp>(Layer(), std::vector<std::string>{"data"});
  NDArray x = Array({2, 3}, {1, -1, 2, 0.5, 0.25, -2});
  NDArray w = Array({2, 3}, {0.3, -0.1, 0.2, 0.1, 0.4, -0.3});
  NDArray b = Array({2}, {0.1, 0.2});
  NDArray gw = autograd::AttachGrad(&w), gb = autograd::AttachGrad(&b);
  std::vector<double> ref_w, ref_b;
  {
    Recording r;
    NDArray s = Invoke("sum", {Imperative(x, w, b)})[0];
    autograd::Backward({s});
  }
  ref_w = Values(gw);
  ref_b = Values(gb);
  for (int round = 0; round < 3; ++round) {
    NDArray s;
    {
      Recording r;
      s = Invoke("sum", {op->Forward({x, w, b})[0]})[0];
    }
    autograd::Backward({s});
    // The buffers are the same arrays: the executor wrote them in place.
    CHECK(autograd::GetGrad(w).var() == gw.var());
    CHECK(CheckClose(gw, ref_w, 1e-5));
    CHECK(CheckClose(gb, ref_b, 1e-5));
  }
  // Each backward releases the executor: the rounds share one.
  CHECK(op->num_executors() == 1);
}

TEST_CASE("two pending calls bind two executors and their gradients add up") {
  auto op = std::make_shared<CachedOp>(Layer(), std::vector<std::string>{"data"});
  NDArray a = Array({1, 2}, {1, 2}), c = Array({1, 2}, {-1, 3});
  NDArray w = Array({2, 2}, {0.5, -0.5, 0.25, 0.75});
  NDArray b = Array({2}, {0, 0});
  NDArray gw = autograd::AttachGrad(&w);
  autograd::AttachGrad(&b);
  std::vector<double> ref;
  {
    Recording r;
    NDArray s =
        Invoke("sum", {Invoke("elemwise_mul", {Imperative(a, w, b), Imperative(c, w, b)})[0]})[0];
    autograd::Backward({s});
  }
  ref = Values(gw);
  NDArray s;
  {
    Recording r;
    NDArray ya = op->Forward({a, w, b})[0];
    NDArray yc = op->Forward({c, w, b})[0];
    s = Invoke("sum", {Invoke("elemwise_mul", {ya, yc})[0]})[0];
  }
  CHECK(op->num_executors() == 2);
  autograd::Backward({s});
  CHECK(CheckClose(gw, ref, 1e-5));
}

TEST_CASE("errors: wrong input count, a second backward, a call by name") {
  auto op = std::make_shared<CachedOp>(Layer(), std::vector<std::string>{"data"});
  NDArray x = Array({1, 2}, {1, 2});
  NDArray w = Array({2, 2}, {1, 0, 0, 1}), b = Array({2}, {0, 0});
  CHECK(test::Contains(test::ErrorOf([&] { op->Forward({x, w}); }), "2 inputs given"));
  CHECK(test::Contains(test::ErrorOf([&] { CachedOp(Layer(), {"nothing"}); }),
                       "'nothing' is not an input"));
  autograd::AttachGrad(&w);
  NDArray s;
  {
    Recording r;
    s = Invoke("sum", {op->Forward({x, w, b})[0]})[0];
  }
  autograd::Backward({s}, {}, /*retain_graph=*/true);
  CHECK(test::Contains(test::ErrorOf([&] { autograd::Backward({s}); }), "once per forward"));
  CHECK(test::Contains(test::ErrorOf([&] { Invoke("_CachedOp", {x}); }), "_CachedOp"));
}
