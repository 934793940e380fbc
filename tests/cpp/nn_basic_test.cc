// The basic neural-network operators: FullyConnected, Activation, LeakyReLU,
// Dropout, Embedding, BlockGrad and MakeLoss: values, shape and type
// inference (both ways), gradients against finite differences, errors.
#include <doctest/doctest.h>

#include <cmath>

#include "engine/ndarray/imperative.h"
#include "engine/op/op_attr_types.h"
#include "ops/nn/lrn-inl.h"
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

// Runs the op's FInferShape on the given partial shapes; returns whether
// everything became known.
bool InferShapes(std::string_view op, const op::ParamDict& params, std::vector<Shape>* in,
                 std::vector<Shape>* out) {
  auto attrs = MakeAttrs(op, params);
  const auto& f = op::Op::GetAttr<op::FInferShape>("FInferShape");
  return f[attrs->op](*attrs, in, out);
}

std::vector<double> Naive(const std::vector<double>& x, double (*f)(double)) {
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = f(x[i]);
  return y;
}

std::vector<std::string> InputNames(std::string_view op, const op::ParamDict& params) {
  auto attrs = MakeAttrs(op, params);
  return op::Op::GetAttr<op::FListInputNames>("FListInputNames")[attrs->op](*attrs);
}

}  // namespace

// ---------------------------------------------------------------- FullyConnected

TEST_CASE("FullyConnected values, flatten and no_bias") {
  NDArray d = Array({3, 2}, {1, 2, 3, 4, 5, 6});
  NDArray w = Array({2, 2}, {1, 0, 1, 1});
  NDArray b = Array({2}, {0, 1});
  CheckClose(Run("FullyConnected", {d, w, b}, {{"num_hidden", "2"}}), {1, 4, 3, 8, 5, 12});
  CheckClose(Run("FullyConnected", {d, w}, {{"num_hidden", "2"}, {"no_bias", "True"}}),
             {1, 3, 3, 7, 5, 11});
  // flatten: (2, 1, 2) is taken as (2, 2); without it the last axis is used.
  NDArray d3 = Array({2, 1, 2}, {1, 2, 3, 4});
  NDArray y = Run("FullyConnected", {d3, w, b}, {{"num_hidden", "2"}});
  CHECK(y.shape() == Shape{2, 2});
  CheckClose(y, {1, 4, 3, 8});
  NDArray z = Run("FullyConnected", {d3, w, b}, {{"num_hidden", "2"}, {"flatten", "False"}});
  CHECK(z.shape() == Shape{2, 1, 2});
  CheckClose(z, {1, 4, 3, 8});
  // A large product against the formula, float32 and float64.
  for (DType t : {DType::kFloat64, DType::kFloat32, DType::kFloat16}) {
    INFO(DTypeName(t));
    NDArray x = RandomArray({37, 53}, -1, 1).AsType(t),
            W = RandomArray({29, 53}, -1, 1, DType::kFloat64, 2).AsType(t),
            B = RandomArray({29}, -1, 1, DType::kFloat64, 3).AsType(t);
    const auto xv = x.ToVector(), wv = W.ToVector(), bv = B.ToVector();
    std::vector<double> ref(37 * 29);
    for (int i = 0; i < 37; ++i)
      for (int h = 0; h < 29; ++h) {
        double s = bv[h];
        for (int k = 0; k < 53; ++k) s += xv[i * 53 + k] * wv[h * 53 + k];
        ref[i * 29 + h] = s;
      }
    NDArray out = Run("FullyConnected", {x, W, B}, {{"num_hidden", "29"}});
    CHECK(out.dtype() == t);
    CheckClose(out, ref, t == DType::kFloat16 ? 1e-2 : 1e-5, t == DType::kFloat16 ? 3e-2 : 1e-5);
  }
}

TEST_CASE("FullyConnected honours kAddTo") {
  NDArray d = Array({1, 2}, {1, 2});
  NDArray w = Array({2, 2}, {1, 0, 1, 1});
  NDArray b = Array({2}, {0, 1});
  NDArray out = Array({1, 2}, {10, 20});
  std::vector<NDArray> outs{out};
  InvokeOptions add;
  add.req = {kAddTo};
  Invoke(MakeAttrs("FullyConnected", {{"num_hidden", "2"}}), {d, w, b}, &outs, add);
  CheckClose(out, {11, 24});
}

TEST_CASE("FullyConnected shape inference works both ways") {
  std::vector<Shape> in{{8, 3, 4}, {}, {}}, out{{}};
  CHECK(InferShapes("FullyConnected", {{"num_hidden", "5"}}, &in, &out));
  CHECK(in[1] == Shape{5, 12});
  CHECK(in[2] == Shape{5});
  CHECK(out[0] == Shape{8, 5});
  // The batch size backwards from the output.
  in = {{0, 12}, {}, {}};
  out = {{16, 5}};
  CHECK(InferShapes("FullyConnected", {{"num_hidden", "5"}}, &in, &out));
  CHECK(in[0] == Shape{16, 12});
  // in_features from the weight.
  in = {{4, 0}, {5, 7}};
  out = {{}};
  CHECK(InferShapes("FullyConnected", {{"num_hidden", "5"}, {"no_bias", "1"}}, &in, &out));
  CHECK(in[0] == Shape{4, 7});
  CHECK(out[0] == Shape{4, 5});
  // flatten=False keeps the leading axes.
  in = {{2, 3, 4}, {}, {}};
  out = {{}};
  CHECK(InferShapes("FullyConnected", {{"num_hidden", "6"}, {"flatten", "false"}}, &in, &out));
  CHECK(in[1] == Shape{6, 4});
  CHECK(out[0] == Shape{2, 3, 6});
  // Unknown data: weight's first dim and the bias still come from num_hidden.
  in = {{}, {}, {}};
  out = {{}};
  CHECK_FALSE(InferShapes("FullyConnected", {{"num_hidden", "3"}}, &in, &out));
  CHECK(in[2] == Shape{3});
  CHECK(in[1] == Shape{3, 0});
}

TEST_CASE("FullyConnected input names and errors") {
  CHECK(InputNames("FullyConnected", {{"num_hidden", "2"}}) ==
        std::vector<std::string>{"data", "weight", "bias"});
  CHECK(InputNames("FullyConnected", {{"num_hidden", "2"}, {"no_bias", "true"}}) ==
        std::vector<std::string>{"data", "weight"});
  NDArray d = Array({3, 2}, {1, 2, 3, 4, 5, 6});
  CHECK(Contains(ErrorOf([&] {
                   Run("FullyConnected", {d, Array({3, 2}, {0, 0, 0, 0, 0, 0}), Array({2}, {0, 0})},
                       {{"num_hidden", "2"}});
                 }),
                 "FullyConnected: weight has shape (3,2) but (2,2) is required ((num_hidden, "
                 "in_features), num_hidden=2, in_features=2 from data (3,2))"));
  CHECK(Contains(ErrorOf([&] {
                   Run("FullyConnected", {d, Array({2, 2}, {0, 0, 0, 0}), Array({3}, {0, 0, 0})},
                       {{"num_hidden", "2"}});
                 }),
                 "FullyConnected: bias has shape (3,) but (2,) is required"));
  CHECK(Contains(ErrorOf([&] {
                   Run("FullyConnected", {d, d}, {{"num_hidden", "0"}});
                 }),
                 "FullyConnected: parameter 'num_hidden' is 0, must be >= 1"));
  CHECK(Contains(ErrorOf([&] { Run("FullyConnected", {d, d}, {}); }), "num_hidden"));
  CHECK(Contains(ErrorOf([&] {
                   Run("FullyConnected",
                       {d.AsType(DType::kInt32), Array({2, 2}, {0, 0, 0, 0}, DType::kInt32)},
                       {{"num_hidden", "2"}, {"no_bias", "true"}});
                 }),
                 "FullyConnected: input 0 has dtype int32"));
}

TEST_CASE("FullyConnected gradients match finite differences") {
  NDArray x = RandomArray({4, 3}, -1, 1), w = RandomArray({5, 3}, -1, 1, DType::kFloat64, 2),
          b = RandomArray({5}, -1, 1, DType::kFloat64, 3);
  CHECK(CheckNumericGradient("FullyConnected", {{"num_hidden", "5"}}, {x, w, b}));
  CHECK(CheckNumericGradient("FullyConnected", {{"num_hidden", "5"}, {"no_bias", "true"}}, {x, w}));
  NDArray x3 = RandomArray({2, 3, 3}, -1, 1);
  CHECK(CheckNumericGradient("FullyConnected", {{"num_hidden", "5"}, {"flatten", "false"}},
                             {x3, w, b}));
  NDArray w9 = RandomArray({5, 9}, -1, 1, DType::kFloat64, 4);
  CHECK(CheckNumericGradient("FullyConnected", {{"num_hidden", "5"}}, {x3, w9, b}));
  // A bias gradient large enough for the threaded column sum.
  NDArray g = RandomArray({300, 200}, -1, 1);
  NDArray xs = RandomArray({300, 4}, -1, 1), ws = RandomArray({200, 4}, -1, 1);
  auto grads = Invoke("_backward_FullyConnected", {g, xs, ws}, {{"num_hidden", "200"}});
  std::vector<double> gv = g.ToVector(), ref(200, 0);
  for (int r = 0; r < 300; ++r)
    for (int j = 0; j < 200; ++j) ref[j] += gv[r * 200 + j];
  CheckClose(grads[2], ref, 1e-10, 1e-10);
}

// ---------------------------------------------------------------- Activation

TEST_CASE("Activation values for every act_type") {
  NDArray x = Array({5}, {-3, -0.5, 0, 0.5, 40}, DType::kFloat64);
  const auto xv = x.ToVector();
  CheckClose(Run("Activation", {x}, {{"act_type", "relu"}}), {0, 0, 0, 0.5, 40});
  CheckClose(Run("Activation", {x}, {{"act_type", "sigmoid"}}),
             Naive(xv, [](double v) { return 1 / (1 + std::exp(-v)); }));
  CheckClose(Run("Activation", {x}, {{"act_type", "tanh"}}),
             Naive(xv, [](double v) { return std::tanh(v); }));
  CheckClose(Run("Activation", {x}, {{"act_type", "softrelu"}}),
             Naive(xv, [](double v) { return std::log1p(std::exp(v)); }));
  CheckClose(Run("Activation", {x}, {{"act_type", "softsign"}}),
             Naive(xv, [](double v) { return v / (1 + std::fabs(v)); }));
  // softrelu does not overflow for large inputs in float32.
  CheckClose(Run("Activation", {Array({2}, {100, -100})}, {{"act_type", "softrelu"}}), {100, 0});
  CHECK(Run("Activation", {Array({2}, {1, 2}, DType::kFloat16)}, {{"act_type", "relu"}}).dtype() ==
        DType::kFloat16);
  // Large arrays go through the threaded launch.
  NDArray big = RandomArray({100000}, -2, 2);
  CheckClose(Run("Activation", {big}, {{"act_type", "tanh"}}),
             Naive(big.ToVector(), [](double v) { return std::tanh(v); }), 1e-12, 1e-14);
}

TEST_CASE("Activation gradients and errors") {
  NDArray x = RandomArray({3, 4}, -2, 2);
  for (const char* t : {"sigmoid", "tanh", "softrelu", "softsign"}) {
    INFO(t);
    CHECK(CheckNumericGradient("Activation", {{"act_type", t}}, {x}));
  }
  CHECK(CheckNumericGradient("Activation", {{"act_type", "relu"}},
                             {Array({4}, {-0.9, -0.2, 0.3, 0.7}, DType::kFloat64)}));
  CHECK(Contains(ErrorOf([&] { Run("Activation", {x}); }), "Activation"));
  CHECK(Contains(ErrorOf([&] {
                   Run("Activation", {x}, {{"act_type", "swish"}});
                 }),
                 "Activation: parameter 'act_type' got 'swish', expected one of {'relu', "
                 "'sigmoid', 'tanh', 'softrelu', 'softsign'}"));
  CHECK(Contains(ErrorOf([&] {
                   Run("Activation", {x.AsType(DType::kInt32)}, {{"act_type", "relu"}});
                 }),
                 "Activation: input 0 has dtype int32"));
}

// ---------------------------------------------------------------- LeakyReLU

TEST_CASE("LeakyReLU values") {
  NDArray x = Array({4}, {-2, -0.5, 0.5, 3}, DType::kFloat64);
  CheckClose(Run("LeakyReLU", {x}), {-0.5, -0.125, 0.5, 3});  // leaky, slope 0.25
  CheckClose(Run("LeakyReLU", {x}, {{"act_type", "leaky"}, {"slope", "0.1"}}),
             {-0.2, -0.05, 0.5, 3});
  CheckClose(Run("LeakyReLU", {x}, {{"act_type", "elu"}, {"slope", "1"}}),
             {std::expm1(-2.0), std::expm1(-0.5), 0.5, 3});
  const double a = 1.6732632423543772848170429916717, l = 1.0507009873554804934193349852946;
  CheckClose(Run("LeakyReLU", {x}, {{"act_type", "selu"}}),
             {l * a * std::expm1(-2.0), l * a * std::expm1(-0.5), l * 0.5, l * 3});
  CheckClose(Run("LeakyReLU", {x}, {{"act_type", "gelu"}}), Naive(x.ToVector(), [](double v) {
               return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
             }));
  // prelu: one slope per channel (axis 1), or one for everything.
  NDArray d = Array({2, 2, 2}, {-1, 1, -2, 2, -3, 3, -4, 4});
  CheckClose(Run("LeakyReLU", {d, Array({2}, {0.1, 0.5})}, {{"act_type", "prelu"}}),
             {-0.1, 1, -1, 2, -0.3, 3, -2, 4});
  CheckClose(Run("LeakyReLU", {d, Array({1}, {0.5})}, {{"act_type", "prelu"}}),
             {-0.5, 1, -1, 2, -1.5, 3, -2, 4});
}

TEST_CASE("LeakyReLU shapes, names, gradients and errors") {
  std::vector<Shape> in{{4, 3, 5, 5}, {}}, out{{}};
  CHECK(InferShapes("LeakyReLU", {{"act_type", "prelu"}}, &in, &out));
  CHECK(in[1] == Shape{3});
  CHECK(out[0] == Shape{4, 3, 5, 5});
  in = {{}};
  out = {{2, 3}};
  CHECK(InferShapes("LeakyReLU", {}, &in, &out));
  CHECK(in[0] == Shape{2, 3});
  CHECK(InputNames("LeakyReLU", {{"act_type", "prelu"}}) ==
        std::vector<std::string>{"data", "gamma"});
  CHECK(InputNames("LeakyReLU", {}) == std::vector<std::string>{"data"});

  NDArray x = RandomArray({2, 3, 4}, -2, 2);
  for (const char* t : {"leaky", "elu", "selu", "gelu"}) {
    INFO(t);
    CHECK(CheckNumericGradient("LeakyReLU", {{"act_type", t}, {"slope", "0.3"}}, {x}));
  }
  NDArray g = RandomArray({3}, 0.1, 0.9, DType::kFloat64, 5);
  CHECK(CheckNumericGradient("LeakyReLU", {{"act_type", "prelu"}}, {x, g}));
  CHECK(CheckNumericGradient("LeakyReLU", {{"act_type", "prelu"}},
                             {x, Array({1}, {0.3}, DType::kFloat64)}));
  NDArray big = RandomArray({64, 8, 70}, -2, 2);  // threaded gamma gradient
  CHECK(CheckNumericGradient("LeakyReLU", {{"act_type", "prelu"}},
                             {RandomArray({3, 4, 2}, -2, 2), RandomArray({4}, 0.1, 0.9)}));
  auto grads = Invoke("_backward_LeakyReLU", {big, big, RandomArray({8}, 0.1, 0.9)},
                      {{"act_type", "prelu"}});
  std::vector<double> bv = big.ToVector(), ref(8, 0);
  for (int o = 0; o < 64; ++o)
    for (int c = 0; c < 8; ++c)
      for (int k = 0; k < 70; ++k) {
        const double v = bv[(o * 8 + c) * 70 + k];
        if (v <= 0) ref[c] += v * v;
      }
  CheckClose(grads[1], ref, 1e-10, 1e-10);

  CHECK(Contains(ErrorOf([&] {
                   Run("LeakyReLU", {x},
                       {{"act_type", "rrelu"}, {"lower_bound", "0.5"}, {"upper_bound", "0.25"}});
                 }),
                 "LeakyReLU: rrelu's lower_bound 0.5 exceeds upper_bound 0.25"));
  CHECK(Contains(
      ErrorOf([&] {
        Run("LeakyReLU", {x, Array({2}, {1, 1}, DType::kFloat64)}, {{"act_type", "prelu"}});
      }),
      "LeakyReLU: gamma has shape (2,) but prelu needs (3,) (one slope per channel, axis 1 of data "
      "(2,3,4)) or (1,)"));
}

// ---------------------------------------------------------------- Dropout

TEST_CASE("Dropout is the identity outside training and drops in training") {
  NDArray x = RandomArray({50, 40}, 0.5, 1.5);
  CheckClose(Run("Dropout", {x}), x.ToVector());
  CheckClose(Run("Dropout", {x}, {{"p", "0.9"}}), x.ToVector());
  InvokeOptions train;
  train.is_train = true;
  auto outs = Invoke("Dropout", {x}, {{"p", "0.3"}}, train);
  REQUIRE(outs.size() == 2);
  const auto xv = x.ToVector(), yv = outs[0].ToVector(), mv = outs[1].ToVector();
  int dropped = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    if (yv[i] == 0) {
      ++dropped;
      CHECK(mv[i] == 0);
    } else {
      CHECK(yv[i] == doctest::Approx(xv[i] / 0.7));
      CHECK(mv[i] == doctest::Approx(1 / 0.7));
    }
  }
  CHECK(dropped > 0.25 * 2000);
  CHECK(dropped < 0.35 * 2000);
  // mode='always' drops in inference too.
  auto always = Invoke("Dropout", {x}, {{"p", "0.5"}, {"mode", "always"}});
  int zeros = 0;
  for (double v : always[0].ToVector()) zeros += v == 0;
  CHECK(zeros > 800);
  CHECK(zeros < 1200);
  // p = 1 drops everything, p = 0 nothing.
  for (double v : Invoke("Dropout", {x}, {{"p", "1"}}, train)[0].ToVector()) CHECK(v == 0);
  CheckClose(Invoke("Dropout", {x}, {{"p", "0"}}, train)[0], xv);
}

TEST_CASE("Dropout with axes shares the mask along them") {
  NDArray x = Run("ones_like", {RandomArray({6, 5, 7}, 0, 1)});
  InvokeOptions train;
  train.is_train = true;
  auto outs = Invoke("Dropout", {x}, {{"p", "0.5"}, {"axes", "(1,)"}}, train);
  const auto y = outs[0].ToVector();
  int zeros = 0;
  for (int i = 0; i < 6; ++i)
    for (int k = 0; k < 7; ++k)
      for (int j = 1; j < 5; ++j) {
        CHECK(y[(i * 5 + j) * 7 + k] == y[(i * 5) * 7 + k]);
        zeros += y[(i * 5 + j) * 7 + k] == 0;
      }
  CHECK(zeros > 0);
  CHECK(zeros < 6 * 7 * 4);
  CHECK(Contains(ErrorOf([&] {
                   Invoke("Dropout", {x}, {{"axes", "(3,)"}}, train);
                 }),
                 "Dropout on data of shape (6,5,7): axes"));
}

TEST_CASE("Dropout backward is ograd * mask, and p=0 matches finite differences") {
  NDArray x = RandomArray({20, 30}, -1, 1);
  InvokeOptions train;
  train.is_train = true;
  auto outs = Invoke("Dropout", {x}, {{"p", "0.4"}}, train);
  NDArray g = RandomArray({20, 30}, -1, 1, DType::kFloat64, 9);
  NDArray gx = Invoke("_backward_Dropout", {g, outs[1]}, {{"p", "0.4"}})[0];
  const auto gv = g.ToVector(), yv = outs[0].ToVector(), gxv = gx.ToVector();
  for (size_t i = 0; i < gv.size(); ++i)
    CHECK(gxv[i] == doctest::Approx(yv[i] == 0 ? 0 : gv[i] / 0.6));
  CHECK(CheckNumericGradient("Dropout", {{"p", "0"}}, {x}));
  CHECK(CheckNumericGradient("Dropout", {{"p", "0.5"}}, {x}));  // inference: the identity
  CHECK(Contains(ErrorOf([&] {
                   Run("Dropout", {x}, {{"p", "1.5"}});
                 }),
                 "Dropout: parameter 'p' is 1.5, must be in [0, 1]"));
  CHECK(Contains(ErrorOf([&] {
                   Run("Dropout", {x}, {{"mode", "sometimes"}});
                 }),
                 "Dropout: parameter 'mode' got 'sometimes'"));
}

// ---------------------------------------------------------------- Embedding

TEST_CASE("Embedding looks rows up, clips indices, and infers shapes") {
  NDArray w = Array({3, 2}, {1, 2, 3, 4, 5, 6});
  NDArray y =
      Run("Embedding", {Array({2, 2}, {1, 0, 2, 1}), w}, {{"input_dim", "3"}, {"output_dim", "2"}});
  CHECK(y.shape() == Shape{2, 2, 2});
  CheckClose(y, {3, 4, 1, 2, 5, 6, 3, 4});
  CheckClose(Run("Embedding", {Array({2}, {-1, 7}, DType::kInt32), w},
                 {{"input_dim", "3"}, {"output_dim", "2"}}),
             {1, 2, 5, 6});
  std::vector<Shape> in{{4, 5}, {}}, out{{}};
  CHECK(InferShapes("Embedding", {{"input_dim", "10"}, {"output_dim", "3"}}, &in, &out));
  CHECK(in[1] == Shape{10, 3});
  CHECK(out[0] == Shape{4, 5, 3});
  in = {{}, {}};
  out = {{4, 5, 3}};
  CHECK(InferShapes("Embedding", {{"input_dim", "10"}, {"output_dim", "3"}}, &in, &out));
  CHECK(in[0] == Shape{4, 5});
  CHECK(InputNames("Embedding", {{"input_dim", "1"}, {"output_dim", "1"}}) ==
        std::vector<std::string>{"data", "weight"});
  // dtype sets the weight's and output's type.
  NDArray y64 = Run("Embedding", {Array({1}, {0}), w.AsType(DType::kFloat64)},
                    {{"input_dim", "3"}, {"output_dim", "2"}, {"dtype", "float64"}});
  CHECK(y64.dtype() == DType::kFloat64);
  CHECK(
      Contains(ErrorOf([&] {
                 Run("Embedding", {Array({1}, {0}), w}, {{"input_dim", "4"}, {"output_dim", "2"}});
               }),
               "Embedding: weight has shape (3,2) but (4,2) is required"));
  CHECK(Contains(ErrorOf([&] {
                   Run("Embedding", {Array({1}, {0}), w},
                       {{"input_dim", "3"}, {"output_dim", "2"}, {"sparse_grad", "true"}});
                 }),
                 "sparse_grad=True"));
}

TEST_CASE("Embedding gradient goes to the weight, repeated rows accumulate") {
  NDArray idx = Array({4}, {2, 0, 2, 1}, DType::kFloat64);
  NDArray w = RandomArray({3, 2}, -1, 1);
  CHECK(CheckNumericGradient("Embedding",
                             {{"input_dim", "3"}, {"output_dim", "2"}, {"dtype", "float64"}},
                             {idx, w}, {.check_inputs = {false, true}}));
  NDArray g = Array({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}, DType::kFloat64);
  auto grads = Invoke("_backward_Embedding", {g, idx},
                      {{"input_dim", "3"}, {"output_dim", "2"}, {"dtype", "float64"}});
  CheckClose(grads[0], {0, 0, 0, 0});
  CheckClose(grads[1], {3, 4, 7, 8, 6, 8});
}

// ---------------------------------------------------------------- BlockGrad, MakeLoss

TEST_CASE("BlockGrad passes values and stops gradients") {
  NDArray x = Array({3}, {1, -2, 3});
  CheckClose(Run("BlockGrad", {x}), {1, -2, 3});
  CheckClose(Run("stop_gradient", {x}), {1, -2, 3});
  auto attrs = MakeAttrs("BlockGrad");
  op::NodePtr n = op::Node::Create();
  n->attrs = *attrs;
  n->attrs.name = "bg";
  op::NodePtr v = op::Node::Variable("x");
  n->inputs.push_back({v, 0, 0});
  auto grads =
      op::Op::GetAttr<op::FGradient>("FGradient")[attrs->op](n, {{op::Node::Variable("g"), 0, 0}});
  REQUIRE(grads.size() == 1);
  CHECK(grads[0].node->op()->name() == "zeros_like");
}

TEST_CASE("MakeLoss backward gives grad_scale, normalised") {
  NDArray x = Array({2, 3}, {0.5, -1, 2, 0, 3, -4});
  CheckClose(Run("MakeLoss", {x}), x.ToVector());
  auto back = [&](op::ParamDict p) { return Invoke("_backward_MakeLoss", {x}, p)[0]; };
  CheckClose(back({}), {1, 1, 1, 1, 1, 1});
  CheckClose(back({{"grad_scale", "2"}, {"normalization", "batch"}}), {1, 1, 1, 1, 1, 1});
  // valid: 3 elements above 0 (0.5, 2, 3); every element gets 3 / 3 (MXNet's
  // make_loss-inl.h), and none above the threshold divides by 1.
  CheckClose(back({{"grad_scale", "3"}, {"normalization", "valid"}}), {1, 1, 1, 1, 1, 1});
  CheckClose(back({{"normalization", "valid"}, {"valid_thresh", "1"}}),
             {0.5, 0.5, 0.5, 0.5, 0.5, 0.5});
  CheckClose(back({{"grad_scale", "2"}, {"normalization", "valid"}, {"valid_thresh", "9"}}),
             {2, 2, 2, 2, 2, 2});
  CHECK(Contains(ErrorOf([&] {
                   Run("MakeLoss", {x}, {{"normalization", "mean"}});
                 }),
                 "MakeLoss: parameter 'normalization' got 'mean', expected one of {'null', "
                 "'batch', 'valid'}"));
}

TEST_CASE("LRN matches its formula; float32 at oneDNN's sizes matches the float64 loop") {
  // (1, 3, 1, 1), nsize 3: s_c = 2 + 0.1 / 3 * (sum of squares of c-1..c+1).
  NDArray x = Array({1, 3, 1, 1}, {1, 2, 3});
  const op::ParamDict p{{"nsize", "3"}, {"alpha", "0.1"}, {"beta", "0.75"}, {"knorm", "2"}};
  const double k = 0.1 / 3;
  CheckClose(Run("LRN", {x}, p),
             {1 * std::pow(2 + k * 5, -0.75), 2 * std::pow(2 + k * 14, -0.75),
              3 * std::pow(2 + k * 13, -0.75)},
             1e-12);
  for (const Shape& s : {Shape{4, 16, 32, 32}, Shape{2, 8, 4096}, Shape{2, 6, 8, 16, 16}}) {
    CAPTURE(s);
    NDArray a = RandomArray(s, -3, 3), g = RandomArray(s, -1, 1);
    const op::ParamDict q{{"nsize", "5"}, {"alpha", "0.01"}, {"beta", "0.75"}, {"knorm", "1"}};
    NDArray y64 = Run("LRN", {a}, q);
    CheckClose(Run("LRN", {a.AsType(DType::kFloat32)}, q), y64.ToVector(), 1e-5, 1e-6);
    NDArray gx64 = Run("_backward_LRN", {g, a}, q);
    CheckClose(Run("_backward_LRN", {g.AsType(DType::kFloat32), a.AsType(DType::kFloat32)}, q),
               gx64.ToVector(), 1e-4, 1e-6);
  }
}

// The GPU runs LRN's element kernels (lrn-inl.h), each element summing the
// windows it needs; run here through the CPU launcher, they must give what the
// CPU's own kernels give, windows cut by the first and last channel included.
TEST_CASE("LRN's element kernels (the GPU's) give the CPU op's values and gradients") {
  for (const char* nsize : {"3", "5", "4"}) {
    CAPTURE(nsize);
    const op::ParamDict q{{"nsize", nsize}, {"alpha", "0.3"}, {"beta", "0.6"}, {"knorm", "1.5"}};
    auto attrs = MakeAttrs("LRN", q);
    for (DType t : {DType::kFloat64, DType::kFloat32}) {
      NDArray a = RandomArray({2, 7, 3, 5}, -3, 3, t), g = RandomArray({2, 7, 3, 5}, -1, 1, t);
      NDArray y = Run("LRN", {a}, q), gx = Run("_backward_LRN", {g, a}, q);
      NDArray ye = NDArray(a.shape(), a.ctx(), t), gxe = NDArray(a.shape(), a.ctx(), t);
      a.WaitToRead();
      g.WaitToRead();
      const op::OpContext ctx{false, RunContext{Context::CPU(), nullptr, 1}, {}, nullptr};
      op::LRNForwardElems<op::cpu>(*attrs, ctx, {a.data()}, {kWriteTo}, {ye.data()});
      op::LRNBackwardElems<op::cpu>(*attrs, ctx, {g.data(), a.data()}, {kWriteTo}, {gxe.data()});
      const double tol = t == DType::kFloat64 ? 1e-12 : 1e-5;
      CHECK(CheckClose(ye, y.ToVector(), tol, tol));
      CHECK(CheckClose(gxe, gx.ToVector(), tol, tol));
      // An added request adds to what is there.
      op::LRNBackwardElems<op::cpu>(*attrs, ctx, {g.data(), a.data()}, {kAddTo}, {gxe.data()});
      std::vector<double> twice = gx.ToVector();
      for (double& v : twice) v *= 2;
      CHECK(CheckClose(gxe, twice, tol, tol));
    }
  }
}
