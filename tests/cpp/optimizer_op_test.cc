// Fused optimizer updates: a few steps of each against MXNet's formulas
// computed here, in place (out = weight) and not, float32 and float64, with
// weight decay, rescaling and clipping; the state inputs are updated in
// place; inference, mutate lists and errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "engine/ndarray/imperative.h"
#include "engine/op/op_attr_types.h"
#include "tests/cpp/op_test_util.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using tessera::test::Array;
using tessera::test::CheckClose;
using tessera::test::Contains;
using tessera::test::ErrorOf;
using tessera::test::Run;

namespace {

using Vec = std::vector<double>;

// MXNet's parameters are float: the references use the rounded values.
double F(double x) {
  return static_cast<double>(static_cast<float>(x));
}

double Clip(double x, double c) {
  return c >= 0 ? std::min(c, std::max(-c, x)) : x;
}

const Vec kW0{0.5, -1.0, 2.0, 0.1, -0.3, 1.5};
// One gradient per step.
const std::vector<Vec> kGrads{{0.3, -0.2, 0.8, -1.5, 0.05, 2.5},
                              {-0.4, 0.6, 0.1, 0.9, -2.2, 0.3},
                              {1.2, -0.7, -0.5, 0.2, 0.4, -0.9}};

// Runs `op` for every step of kGrads from kW0 with zero states, in place
// (out = weight) or into a fresh output copied back, and compares weight and
// states with `ref`, which advances (w, states) by one step on element i.
void CheckSteps(const char* op, op::ParamDict params, int n_states,
                const std::function<void(double& w, double g, std::vector<double*> s)>& ref,
                DType dtype, bool in_place, double rtol) {
  CAPTURE(op);
  CAPTURE(in_place);
  const Shape shape{2, 3};
  NDArray w = Array(shape, kW0, dtype);
  std::vector<NDArray> states;
  for (int k = 0; k < n_states; ++k) states.push_back(Array(shape, Vec(6, 0.0), dtype));
  Vec rw = kW0;
  std::vector<Vec> rs(n_states, Vec(6, 0.0));
  auto attrs = MakeAttrs(op, params);
  for (const Vec& g : kGrads) {
    std::vector<NDArray> in{w, Array(shape, g, dtype)};
    for (auto& s : states) in.push_back(s);
    if (in_place) {
      std::vector<NDArray> out{w};
      Invoke(attrs, in, &out);
    } else {
      std::vector<NDArray> out;
      Invoke(attrs, in, &out);
      CHECK(out[0].dtype() == dtype);
      CopyFromTo(out[0], w);
    }
    for (int i = 0; i < 6; ++i) {
      std::vector<double*> sp;
      for (auto& s : rs) sp.push_back(&s[i]);
      ref(rw[i], g[i], sp);
    }
    CheckClose(w, rw, rtol, 1e-6);
    for (int k = 0; k < n_states; ++k) CheckClose(states[k], rs[k], rtol, 1e-6);
  }
}

void CheckAll(const char* op, const op::ParamDict& params, int n_states,
              const std::function<void(double& w, double g, std::vector<double*> s)>& ref) {
  for (bool in_place : {true, false}) {
    CheckSteps(op, params, n_states, ref, DType::kFloat64, in_place, 1e-12);
    CheckSteps(op, params, n_states, ref, DType::kFloat32, in_place, 1e-5);
  }
}

}  // namespace

TEST_CASE("sgd_update follows MXNet's formula") {
  for (double clip : {-1.0, 0.5}) {
    const double lr = F(0.1), wd = F(0.01), rescale = 0.5;
    CheckAll("sgd_update",
             {{"lr", "0.1"},
              {"wd", "0.01"},
              {"rescale_grad", "0.5"},
              {"clip_gradient", std::to_string(clip)}},
             0, [&](double& w, double g, std::vector<double*>) {
               w = (1 - lr * wd) * w - lr * Clip(rescale * g, clip);
             });
  }
  // Defaults: wd 0, rescale 1, no clipping; lazy_update accepted.
  CheckAll("sgd_update", {{"lr", "0.2"}, {"lazy_update", "false"}}, 0,
           [](double& w, double g, std::vector<double*>) { w -= F(0.2) * g; });
}

TEST_CASE("sgd_mom_update follows MXNet's formula and updates mom in place") {
  for (double clip : {-1.0, 0.5}) {
    const double lr = F(0.1), wd = F(0.01), rescale = 0.5, mom = F(0.9);
    CheckAll("sgd_mom_update",
             {{"lr", "0.1"},
              {"momentum", "0.9"},
              {"wd", "0.01"},
              {"rescale_grad", "0.5"},
              {"clip_gradient", std::to_string(clip)}},
             1, [&](double& w, double g, std::vector<double*> s) {
               double& v = *s[0];
               v = mom * v - lr * wd * w - lr * Clip(rescale * g, clip);
               w += v;
             });
  }
}

TEST_CASE("nag_mom_update follows MXNet's formula") {
  for (double clip : {-1.0, 0.5}) {
    const double lr = F(0.1), wd = F(0.01), rescale = 0.5, mom = F(0.9);
    CheckAll("nag_mom_update",
             {{"lr", "0.1"},
              {"momentum", "0.9"},
              {"wd", "0.01"},
              {"rescale_grad", "0.5"},
              {"clip_gradient", std::to_string(clip)}},
             1, [&](double& w, double g, std::vector<double*> s) {
               double& v = *s[0];
               v = mom * v;
               const double step = lr * (Clip(rescale * g, clip) + wd * w);
               w = w - v + (mom + 1) * (v - step);
               v -= step;
             });
  }
}

TEST_CASE("adam_update follows MXNet's formula and updates mean and var in place") {
  for (double clip : {-1.0, 0.5}) {
    const double lr = F(0.01), wd = F(0.02), rescale = 0.5, b1 = F(0.8), b2 = F(0.95),
                 eps = F(1e-6);
    CheckAll("adam_update",
             {{"lr", "0.01"},
              {"beta1", "0.8"},
              {"beta2", "0.95"},
              {"epsilon", "1e-6"},
              {"wd", "0.02"},
              {"rescale_grad", "0.5"},
              {"clip_gradient", std::to_string(clip)}},
             2, [&](double& w, double g, std::vector<double*> s) {
               double &m = *s[0], &v = *s[1];
               const double gr = Clip(rescale * g + wd * w, clip);
               m = b1 * m + (1 - b1) * gr;
               v = b2 * v + (1 - b2) * gr * gr;
               w -= lr * m / (std::sqrt(v) + eps);
             });
  }
  // MXNet's defaults: beta1 0.9, beta2 0.999, epsilon 1e-8.
  CheckAll("adam_update", {{"lr", "0.01"}}, 2, [](double& w, double g, std::vector<double*> s) {
    double &m = *s[0], &v = *s[1];
    m = F(0.9) * m + (1 - F(0.9)) * g;
    v = F(0.999) * v + (1 - F(0.999)) * g * g;
    w -= F(0.01) * m / (std::sqrt(v) + F(1e-8));
  });
}

TEST_CASE("rmsprop_update and rmspropalex_update follow MXNet's formulas") {
  for (double clip : {-1.0, 0.5}) {
    for (double clip_w : {-1.0, 0.625}) {
      const double lr = F(0.01), wd = F(0.02), rescale = 0.5, g1 = F(0.9), g2 = F(0.8),
                   eps = F(1e-6);
      CheckAll("rmsprop_update",
               {{"lr", "0.01"},
                {"gamma1", "0.9"},
                {"epsilon", "1e-6"},
                {"wd", "0.02"},
                {"rescale_grad", "0.5"},
                {"clip_gradient", std::to_string(clip)},
                {"clip_weights", std::to_string(clip_w)}},
               1, [&](double& w, double g, std::vector<double*> s) {
                 double& n = *s[0];
                 const double gr = Clip(rescale * g + wd * w, clip);
                 n = (1 - g1) * gr * gr + g1 * n;
                 w = Clip(w - lr * gr / std::sqrt(n + eps), clip_w);
               });
      CheckAll("rmspropalex_update",
               {{"lr", "0.01"},
                {"gamma1", "0.9"},
                {"gamma2", "0.8"},
                {"epsilon", "1e-6"},
                {"wd", "0.02"},
                {"rescale_grad", "0.5"},
                {"clip_gradient", std::to_string(clip)},
                {"clip_weights", std::to_string(clip_w)}},
               3, [&](double& w, double g, std::vector<double*> s) {
                 double &n = *s[0], &ga = *s[1], &d = *s[2];
                 const double gr = Clip(rescale * g + wd * w, clip);
                 n = (1 - g1) * gr * gr + g1 * n;
                 ga = (1 - g1) * gr + g1 * ga;
                 d = g2 * d - lr * gr / std::sqrt(n - ga * ga + eps);
                 w = Clip(w + d, clip_w);
               });
    }
  }
}

TEST_CASE("optimizer ops: without out the weight is unchanged; attributes and errors") {
  NDArray w = Array({3}, {1, 2, 3});
  NDArray g = Array({3}, {1, 1, 1});
  NDArray mom = Array({3}, {0, 0, 0});
  NDArray nw = Run("sgd_mom_update", {w, g, mom}, {{"lr", "0.5"}});
  CheckClose(nw, {0.5, 1.5, 2.5});
  CheckClose(w, {1, 2, 3});
  CheckClose(mom, {-0.5, -0.5, -0.5});  // the state is written in place

  using op::Op;
  const auto& mutate = Op::GetAttr<op::FMutateInputs>("FMutateInputs");
  const auto& names = Op::GetAttr<op::FListInputNames>("FListInputNames");
  op::NodeAttrs none;
  CHECK_FALSE(mutate.contains(Op::Get("sgd_update")));
  CHECK(mutate[Op::Get("sgd_mom_update")](none) == std::vector<uint32_t>{2});
  CHECK(mutate[Op::Get("nag_mom_update")](none) == std::vector<uint32_t>{2});
  CHECK(mutate[Op::Get("adam_update")](none) == std::vector<uint32_t>{2, 3});
  CHECK(mutate[Op::Get("rmsprop_update")](none) == std::vector<uint32_t>{2});
  CHECK(mutate[Op::Get("rmspropalex_update")](none) == std::vector<uint32_t>{2, 3, 4});
  CHECK(names[Op::Get("adam_update")](none) ==
        std::vector<std::string>{"weight", "grad", "mean", "var"});
  CHECK(names[Op::Get("rmspropalex_update")](none) ==
        std::vector<std::string>{"weight", "grad", "n", "g", "delta"});
  CHECK_FALSE(Op::GetAttr<op::FGradient>("FGradient").contains(Op::Get("adam_update")));

  CHECK(Contains(ErrorOf([] { MakeAttrs("sgd_update", {}); }), "lr"));
  CHECK(Contains(ErrorOf([&] {
                   Run("sgd_update", {w, Array({2}, {1, 1})}, {{"lr", "1"}});
                 }),
                 "sgd_update"));
  CHECK(Contains(ErrorOf([&] {
                   Run("sgd_update",
                       {Array({3}, {1, 2, 3}, DType::kInt32), Array({3}, {1, 1, 1}, DType::kInt32)},
                       {{"lr", "1"}});
                 }),
                 "float32, float64"));
  CHECK(Contains(
      ErrorOf([&] {
        Run("adam_update", {w, g, mom, Array({3}, {0, 0, 0}, DType::kFloat64)}, {{"lr", "1"}});
      }),
      "adam_update"));
}
