// Loss and output layers: SoftmaxOutput (Softmax), SoftmaxActivation,
// Linear/MAE/LogisticRegressionOutput and softmax_cross_entropy: forward
// values, the backward against MXNet's formulas, shape inference, errors.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "engine/ndarray/imperative.h"
#include "engine/op/op_attr_types.h"
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

std::vector<double> SoftmaxRows(const std::vector<double>& x, int64_t rows, int64_t k) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mx = x[r * k], sum = 0;
    for (int64_t j = 1; j < k; ++j) mx = std::max(mx, x[r * k + j]);
    for (int64_t j = 0; j < k; ++j) sum += std::exp(x[r * k + j] - mx);
    for (int64_t j = 0; j < k; ++j) y[r * k + j] = std::exp(x[r * k + j] - mx) / sum;
  }
  return y;
}

// Runs a backward op and returns output `index`.
NDArray Backward(const char* op, const std::vector<NDArray>& in, op::ParamDict params,
                 size_t index = 0) {
  return Run(op, in, std::move(params), index);
}

bool InferShapes(const char* op_name, op::ParamDict params, std::vector<Shape>* in,
                 std::vector<Shape>* out) {
  auto attrs = MakeAttrs(op_name, std::move(params));
  const auto& f = op::Op::GetAttr<op::FInferShape>("FInferShape")[attrs->op];
  return f(*attrs, in, out);
}

}  // namespace

TEST_CASE("SoftmaxOutput forward is the softmax of each instance") {
  const std::vector<double> x{1, 2, 3, 1, 1, 1};
  NDArray d = Array({2, 3}, x);
  NDArray out = Run("SoftmaxOutput", {d, Array({2}, {2, 0})});
  CheckClose(out, SoftmaxRows(x, 2, 3));
  // The deprecated name is an alias.
  CHECK(op::Op::Get("Softmax") == op::Op::Get("SoftmaxOutput"));
  CheckClose(Run("Softmax", {d, Array({2}, {2, 0})}), SoftmaxRows(x, 2, 3));
  // (n, a, b) without multi_output: each instance over a * b values.
  const std::vector<double> x3{1, 2, 3, 4, 0, 0, 0, 1};
  CheckClose(Run("SoftmaxOutput", {Array({2, 2, 2}, x3), Array({2, 2}, {0, 0, 0, 0})}),
             SoftmaxRows(x3, 2, 4));
  // preserve_shape: along the last axis.
  CheckClose(Run("SoftmaxOutput", {Array({2, 2, 2}, x3), Array({2, 2}, {0, 0, 0, 0})},
                 {{"preserve_shape", "true"}}),
             SoftmaxRows(x3, 4, 2));
  // multi_output: along axis 1 at each position: (1, 2, 2) -> columns.
  NDArray m = Run("SoftmaxOutput", {Array({1, 2, 2}, {1, 5, 3, 5}), Array({1, 2}, {0, 1})},
                  {{"multi_output", "true"}});
  const double a = 1 / (1 + std::exp(2.0));
  CheckClose(m, {a, 0.5, 1 - a, 0.5});
}

TEST_CASE("SoftmaxOutput backward is (softmax - one_hot(label)) * scale") {
  const std::vector<double> x{1, 2, 3, 1, 1, 1};
  const std::vector<double> p = SoftmaxRows(x, 2, 3);
  NDArray label = Array({2}, {2, 0});
  NDArray out = Run("SoftmaxOutput", {Array({2, 3}, x), label});
  auto expect = [&](double scale, std::vector<double> onehot, std::vector<bool> keep,
                    double alpha = 0) {
    std::vector<double> g(6);
    for (int r = 0; r < 2; ++r)
      for (int j = 0; j < 3; ++j) {
        const int i = r * 3 + j;
        const double target = onehot[i] ? 1 - alpha : alpha / 2;
        g[i] = keep[r] ? (p[i] - target) * scale : 0;
      }
    return g;
  };
  const std::vector<double> oh{0, 0, 1, 1, 0, 0};
  CheckClose(Backward("_backward_SoftmaxOutput", {label, out}, {}), expect(1, oh, {true, true}));
  CheckClose(Backward("_backward_SoftmaxOutput", {label, out}, {{"grad_scale", "3"}}),
             expect(3, oh, {true, true}));
  CheckClose(Backward("_backward_SoftmaxOutput", {label, out},
                      {{"grad_scale", "3"}, {"normalization", "batch"}}),
             expect(1.5, oh, {true, true}));
  // use_ignore: instances labelled ignore_label get no gradient; 'valid'
  // divides by the instances that remain.
  CheckClose(Backward("_backward_SoftmaxOutput", {label, out},
                      {{"use_ignore", "true"}, {"ignore_label", "0"}}),
             expect(1, oh, {true, false}));
  CheckClose(Backward("_backward_SoftmaxOutput", {label, out},
                      {{"normalization", "valid"}, {"use_ignore", "true"}, {"ignore_label", "2"}}),
             expect(1, oh, {false, true}));
  CheckClose(Backward("_backward_SoftmaxOutput", {label, out}, {{"normalization", "valid"}}),
             expect(0.5, oh, {true, true}));
  // Label smoothing: 1 - alpha on the label, alpha / (k - 1) elsewhere.
  CheckClose(Backward("_backward_SoftmaxOutput", {label, out}, {{"smooth_alpha", "0.3"}}),
             expect(1, oh, {true, true}, 0.3), 1e-5, 1e-6);
  // The label gradient is zero.
  CheckClose(Backward("_backward_SoftmaxOutput", {label, out}, {}, 1), {0, 0});
  // out_grad: the head gradient multiplies the result.
  NDArray og = Array({2, 3}, {1, 2, 3, 4, 5, 6});
  std::vector<double> want = expect(1, oh, {true, true});
  for (int i = 0; i < 6; ++i) want[i] *= i + 1;
  CheckClose(Backward("_backward_SoftmaxOutput", {label, out, og}, {{"out_grad", "true"}}), want);
}

TEST_CASE("SoftmaxOutput with probabilities as labels and multi_output") {
  const std::vector<double> x{1, 2, 3, 1, 1, 1};
  NDArray soft = Array({2, 3}, {0.2, 0.3, 0.5, 1, 0, 0});
  NDArray out = Run("SoftmaxOutput", {Array({2, 3}, x), soft});
  const std::vector<double> p = SoftmaxRows(x, 2, 3);
  std::vector<double> want(6);
  const std::vector<double> s{0.2, 0.3, 0.5, 1, 0, 0};
  for (int i = 0; i < 6; ++i) want[i] = (p[i] - s[i]) * 2;
  CheckClose(Backward("_backward_SoftmaxOutput", {soft, out}, {{"grad_scale", "2"}}), want);

  // multi_output (1, 2, 2), labels (1, 2) = [0, 1]: per position softmax
  // minus one_hot, divided by the positions (2) with normalization 'null'.
  NDArray mlabel = Array({1, 2}, {0, 1});
  NDArray mout =
      Run("SoftmaxOutput", {Array({1, 2, 2}, {1, 5, 3, 5}), mlabel}, {{"multi_output", "true"}});
  const double a = 1 / (1 + std::exp(2.0));
  // out = [[a, 0.5], [1 - a, 0.5]] (channel, position).
  CheckClose(Backward("_backward_SoftmaxOutput", {mlabel, mout}, {{"multi_output", "true"}}),
             {(a - 1) / 2, 0.5 / 2, (1 - a) / 2, (0.5 - 1) / 2});
  CheckClose(Backward("_backward_SoftmaxOutput", {mlabel, mout},
                      {{"multi_output", "true"}, {"normalization", "batch"}}),
             {(a - 1) / 2, 0.5 / 2, (1 - a) / 2, (0.5 - 1) / 2});
  CheckClose(Backward("_backward_SoftmaxOutput", {mlabel, mout},
                      {{"multi_output", "true"},
                       {"normalization", "valid"},
                       {"use_ignore", "true"},
                       {"ignore_label", "1"}}),
             {a - 1, 0, 1 - a, 0});
}

TEST_CASE("SoftmaxOutput infers the label shape from the data") {
  std::vector<Shape> in{Shape{4, 10}, Shape{}}, out{Shape{}};
  CHECK(InferShapes("SoftmaxOutput", {}, &in, &out));
  CHECK(in[1] == Shape{4});
  CHECK(out[0] == Shape{4, 10});
  in = {Shape{4, 3, 5, 6}, Shape{}};
  out = {Shape{}};
  CHECK(InferShapes("SoftmaxOutput", {{"multi_output", "true"}}, &in, &out));
  CHECK(in[1] == Shape{4, 30});
  in = {Shape{4, 3, 5, 6}, Shape{4, 5, 6}};
  CHECK(InferShapes("SoftmaxOutput", {{"multi_output", "true"}}, &in, &out));
  in = {Shape{4, 10}, Shape{4, 10}};  // probabilities
  out = {Shape{}};
  CHECK(InferShapes("SoftmaxOutput", {}, &in, &out));
  in = {Shape{}, Shape{4}};  // the data is not inferred from the label
  out = {Shape{}};
  CHECK_FALSE(InferShapes("SoftmaxOutput", {}, &in, &out));
  CHECK(Contains(
      ErrorOf([] {
        Run("SoftmaxOutput", {Array({4, 10}, std::vector<double>(40)), Array({3}, {0, 0, 0})});
      }),
      "SoftmaxOutput"));
  in = {Shape{4, 3, 5}, Shape{4, 7}};
  out = {Shape{}};
  CHECK(Contains(ErrorOf([&] {
                   InferShapes("SoftmaxOutput", {{"multi_output", "true"}}, &in, &out);
                 }),
                 "label has shape (4,7)"));
  CHECK(Contains(ErrorOf([] {
                   MakeAttrs("SoftmaxOutput", {{"normalization", "all"}});
                 }),
                 "normalization"));
  CHECK(Contains(ErrorOf([] {
                   MakeAttrs("SoftmaxOutput", {{"smooth_alpha", "2"}});
                 }),
                 "smooth_alpha"));
}

TEST_CASE("SoftmaxOutput in float64 and with add requests") {
  NDArray d = Array({1, 2}, {0, 0}, DType::kFloat64);
  NDArray l = Array({1}, {1}, DType::kFloat64);
  NDArray out = Run("SoftmaxOutput", {d, l});
  CHECK(out.dtype() == DType::kFloat64);
  CheckClose(out, {0.5, 0.5});
  NDArray g = Array({1, 2}, {1, 1}, DType::kFloat64);
  std::vector<NDArray> outs{g, Array({1}, {0}, DType::kFloat64)};
  InvokeOptions opt;
  opt.req = {kAddTo, kAddTo};
  Invoke(MakeAttrs("_backward_SoftmaxOutput", {}), {l, out}, &outs, opt);
  CheckClose(g, {1.5, 0.5});
}

TEST_CASE("SoftmaxActivation: instance and channel modes, gradients") {
  const std::vector<double> x{1, 2, 3, 1, 1, 1};
  CheckClose(Run("SoftmaxActivation", {Array({2, 3}, x)}), SoftmaxRows(x, 2, 3));
  // channel: (1, 2, 2) softmax over axis 1 at each position.
  const double a = 1 / (1 + std::exp(2.0));
  CheckClose(Run("SoftmaxActivation", {Array({1, 2, 2}, {1, 5, 3, 5})}, {{"mode", "channel"}}),
             {a, 0.5, 1 - a, 0.5});
  NDArray r3 = RandomArray({2, 3, 4}, -1, 1);
  CHECK(CheckNumericGradient("SoftmaxActivation", {}, {RandomArray({3, 4}, -1, 1)}));
  CHECK(CheckNumericGradient("SoftmaxActivation", {}, {r3}));
  CHECK(CheckNumericGradient("SoftmaxActivation", {{"mode", "channel"}}, {r3}));
  CHECK(Contains(
      ErrorOf([] {
        Run("SoftmaxActivation", {Array({2, 3}, {1, 2, 3, 4, 5, 6})}, {{"mode", "channel"}});
      }),
      "at least 3 dimensions"));
}

TEST_CASE("regression outputs: forward, backward and label shapes") {
  NDArray d = Array({2, 1}, {1, 2});
  NDArray l = Array({2}, {0, 4});
  CheckClose(Run("LinearRegressionOutput", {d, l}), {1, 2});
  CheckClose(Run("MAERegressionOutput", {d, l}), {1, 2});
  const double s1 = 1 / (1 + std::exp(-1.0)), s2 = 1 / (1 + std::exp(-2.0));
  NDArray lo = Run("LogisticRegressionOutput", {d, Array({2}, {1, 0})});
  CheckClose(lo, {s1, s2});
  // Gradients ignore the head gradient: (out - label) * grad_scale / m.
  NDArray out = Run("LinearRegressionOutput", {d, l});
  CheckClose(Run("_backward_linear_reg_out", {l, out}), {1, -2});
  CheckClose(Run("_backward_linear_reg_out", {l, out}, {{"grad_scale", "0.5"}}), {0.5, -1});
  CheckClose(Run("_backward_linear_reg_out", {l, out}, {}, 1), {0, 0});
  CheckClose(Run("_backward_mae_reg_out", {l, out}, {{"grad_scale", "2"}}), {2, -2});
  CheckClose(Run("_backward_mae_reg_out", {Array({2}, {1, 3}), out}), {-1, -1});  // tie: -1
  CheckClose(Run("_backward_logistic_reg_out", {Array({2}, {1, 0}), lo}), {s1 - 1, s2});
  // m = label.size / label.shape[0]: (2, 3) data and label -> / 3.
  NDArray d2 = Array({2, 3}, {1, 2, 3, 4, 5, 6});
  NDArray l2 = Array({2, 3}, {0, 0, 0, 0, 0, 0});
  NDArray o2 = Run("LinearRegressionOutput", {d2, l2});
  CheckClose(Run("_backward_linear_reg_out", {l2, o2}), {1 / 3.0, 2 / 3.0, 1, 4 / 3.0, 5 / 3.0, 2});

  std::vector<Shape> in{Shape{5, 1}, Shape{}}, outs{Shape{}};
  CHECK(InferShapes("LinearRegressionOutput", {}, &in, &outs));
  CHECK(in[1] == Shape{5});
  in = {Shape{5, 2}, Shape{}};
  outs = {Shape{}};
  CHECK(InferShapes("LogisticRegressionOutput", {}, &in, &outs));
  CHECK(in[1] == Shape{5, 2});
  in = {Shape{5, 2}, Shape{10}};
  CHECK(Contains(ErrorOf([&] { InferShapes("MAERegressionOutput", {}, &in, &outs); }),
                 "inconsistent"));
  in = {Shape{5, 2}, Shape{5, 1, 2}};
  outs = {Shape{}};
  CHECK(InferShapes("MAERegressionOutput", {}, &in, &outs));
}

TEST_CASE("softmax_cross_entropy: MXNet's example, gradient and errors") {
  NDArray x = Array({2, 3}, {1, 2, 3, 11, 7, 5});
  NDArray l = Array({2}, {2, 0});
  NDArray loss = Run("softmax_cross_entropy", {x, l});
  CHECK(loss.shape() == Shape{1});
  const std::vector<double> p = SoftmaxRows({1, 2, 3, 11, 7, 5}, 2, 3);
  CheckClose(loss, {-std::log(p[2]) - std::log(p[3])});
  CheckClose(loss, {0.4281871}, 1e-5);
  // Backward: ograd * (softmax - one_hot), zeros for the label.
  NDArray og = Array({1}, {2});
  std::vector<double> want = p;
  want[2] -= 1;
  want[3] -= 1;
  for (double& v : want) v *= 2;
  CheckClose(Run("_backward_softmax_cross_entropy", {og, x, l}), want);
  CheckClose(Run("_backward_softmax_cross_entropy", {og, x, l}, {}, 1), {0, 0});
  test::GradCheckOptions opt;
  opt.check_inputs = {true, false};
  CHECK(CheckNumericGradient("softmax_cross_entropy", {},
                             {RandomArray({3, 4}, -1, 1), Array({3}, {0, 3, 1}, DType::kFloat64)},
                             opt));
  CHECK(Contains(ErrorOf([] {
                   Run("softmax_cross_entropy",
                       {Array({2, 2, 2}, std::vector<double>(8)), Array({2}, {0, 0})});
                 }),
                 "2-D"));
  CHECK(Contains(ErrorOf([] {
                   Run("softmax_cross_entropy",
                       {Array({2, 3}, std::vector<double>(6)), Array({3}, {0, 0, 0})});
                 }),
                 "batch size"));
  CHECK(Contains(ErrorOf([] {
                   Run("softmax_cross_entropy",
                       {Array({2, 3}, std::vector<double>(6)), Array({2}, {0, 3})})
                       .WaitToRead();
                 }),
                 "outside [0, 3)"));
}

TEST_CASE("SoftmaxOutput backward on a large batch (threaded rows)") {
  const int64_t n = 300, k = 200;
  NDArray d = RandomArray({n, k}, -2, 2, DType::kFloat64);
  std::vector<double> lv(n);
  for (int64_t r = 0; r < n; ++r) lv[r] = double((r * 7) % k);
  NDArray label = Array({n}, lv, DType::kFloat64);
  NDArray out = Run("SoftmaxOutput", {d, label});
  std::vector<double> want = SoftmaxRows(d.ToVector(), n, k);
  CheckClose(out, want, 1e-10, 1e-12);
  for (int64_t r = 0; r < n; ++r) want[r * k + (r * 7) % k] -= 1;
  for (double& v : want) v /= n;
  CheckClose(Run("_backward_SoftmaxOutput", {label, out}, {{"normalization", "batch"}}), want,
             1e-10, 1e-12);
}
