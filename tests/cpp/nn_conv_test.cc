// Convolution, Pooling and BatchNorm: values, shape inference, requests,
// float32 (oneDNN) against the float64 reference kernels, gradients against
// finite differences, and parameter errors.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <thread>

#include "engine/ndarray/imperative.h"
#include "engine/resource/resource.h"
#include "engine/scheduler/engine.h"
#include "ops/nn/convolution-inl.h"
#include "tests/cpp/op_test_util.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using tessera::test::Array;
using tessera::test::CheckClose;
using tessera::test::CheckNumericGradient;
using tessera::test::Contains;
using tessera::test::ErrorOf;
using tessera::test::GradCheckOptions;
using tessera::test::Iota;
using tessera::test::IotaArray;
using tessera::test::RandomArray;
using tessera::test::Run;

namespace {

// Runs op on float64 inputs and on the same inputs as float32; every output
// of the float32 run must match the float64 run.
void CheckF32AgainstF64(const std::string& op, const std::vector<NDArray>& in64,
                        const op::ParamDict& params, int n_out, double rtol = 1e-4,
                        double atol = 1e-4) {
  std::vector<NDArray> in32;
  for (const NDArray& a : in64) in32.push_back(a.AsType(DType::kFloat32));
  std::vector<NDArray> o64, o32;
  Invoke(MakeAttrs(op, params), in64, &o64);
  Invoke(MakeAttrs(op, params), in32, &o32);
  REQUIRE(o32.size() >= size_t(n_out));
  for (int k = 0; k < n_out; ++k) {
    INFO(op << " output " << k);
    CHECK(o32[k].dtype() == DType::kFloat32);
    CheckClose(o32[k], o64[k].ToVector(), rtol, atol);
  }
}

struct ConvCase {
  Shape data;
  op::ParamDict params;
  int64_t cg;  // channels per group of the weight
  Shape kernel;
  // Gradients summed over many positions lose more to float32 rounding.
  double atol = 1e-4;
};

}  // namespace

TEST_CASE("Convolution values, shapes and names") {
  NDArray x = Array({1, 1, 4, 4}, Iota(16, 1));
  NDArray w = Array({2, 1, 3, 3}, std::vector<double>(18, 1.0));
  NDArray b = Array({2}, {0, 1});
  for (DType t : {DType::kFloat32, DType::kFloat64}) {
    NDArray y = Run("Convolution", {x.AsType(t), w.AsType(t), b.AsType(t)},
                    {{"kernel", "(3,3)"}, {"num_filter", "2"}});
    CHECK(y.shape() == Shape{1, 2, 2, 2});
    CheckClose(y, {54, 63, 90, 99, 55, 64, 91, 100});
    NDArray p = Run("Convolution", {x.AsType(t), w.AsType(t), b.AsType(t)},
                    {{"kernel", "(3,3)"}, {"num_filter", "2"}, {"pad", "(1,1)"}});
    CheckClose(p, {14, 24, 30, 22, 33, 54, 63, 45, 57, 90, 99,  69, 46, 72, 78, 54,
                   15, 25, 31, 23, 34, 55, 64, 46, 58, 91, 100, 70, 47, 73, 79, 55});
  }
  // 1-D, stride, no_bias.
  NDArray y1 =
      Run("Convolution", {Array({1, 1, 5}, Iota(5, 1)), Array({1, 1, 2}, {1, -1})},
          {{"kernel", "(2,)"}, {"num_filter", "1"}, {"no_bias", "True"}, {"stride", "(2,)"}});
  CHECK(y1.shape() == Shape{1, 1, 2});
  CheckClose(y1, {-1, -1});

  // Mutual inference: weight and bias from data, the batch size from the output.
  const op::Op* conv = op::Op::Get("Convolution");
  auto attrs = MakeAttrs("Convolution", {{"kernel", "(3,3)"},
                                         {"num_filter", "8"},
                                         {"num_group", "2"},
                                         {"stride", "(2,2)"},
                                         {"dilate", "(2,2)"},
                                         {"pad", "(1,1)"}});
  const auto& finfer = op::Op::GetAttr<op::FInferShape>("FInferShape");
  std::vector<Shape> in{Shape{0, 4, 11, 12}, Shape(), Shape()}, out{Shape{5, 0, 0, 0}};
  CHECK(finfer[conv](*attrs, &in, &out));
  CHECK(in[0] == Shape{5, 4, 11, 12});
  CHECK(in[1] == Shape{8, 2, 3, 3});
  CHECK(in[2] == Shape{8});
  CHECK(out[0] == Shape{5, 8, 5, 5});
  // The channels from the weight.
  std::vector<Shape> in2{Shape{5, 0, 11, 12}, Shape{8, 2, 3, 3}, Shape()}, out2{Shape()};
  CHECK(finfer[conv](*attrs, &in2, &out2));
  CHECK(in2[0] == Shape{5, 4, 11, 12});
  CHECK(out2[0] == Shape{5, 8, 5, 5});
  const auto& fnames = op::Op::GetAttr<op::FListInputNames>("FListInputNames");
  CHECK(fnames[conv](*attrs) == std::vector<std::string>{"data", "weight", "bias"});
  CHECK(fnames[conv](*MakeAttrs("Convolution",
                                {{"kernel", "(3,3)"}, {"num_filter", "8"}, {"no_bias", "True"}})) ==
        std::vector<std::string>{"data", "weight"});
}

namespace {

void CheckConvCases(const std::vector<ConvCase>& cases) {
  uint64_t seed = 10;
  for (const ConvCase& c : cases) {
    const int64_t f = std::stoll(c.params.at("num_filter"));
    std::vector<int64_t> wd{f, c.cg};
    for (int64_t k : c.kernel) wd.push_back(k);
    const bool bias = !c.params.count("no_bias");
    NDArray x = RandomArray(c.data, -1, 1, DType::kFloat64, seed++);
    NDArray w = RandomArray(Shape(wd), -1, 1, DType::kFloat64, seed++);
    std::vector<NDArray> in{x, w};
    if (bias) in.push_back(RandomArray({f}, -1, 1, DType::kFloat64, seed++));
    INFO("data " << c.data << " kernel " << c.kernel);
    CheckF32AgainstF64("Convolution", in, c.params, 1);
    NDArray y = Run("Convolution", in, c.params);
    NDArray og = RandomArray(y.shape(), -1, 1, DType::kFloat64, seed++);
    CheckF32AgainstF64("_backward_Convolution", {og, x, w}, c.params, bias ? 3 : 2, 1e-4, c.atol);

    // Add requests accumulate, on both paths.
    for (DType t : {DType::kFloat32, DType::kFloat64}) {
      std::vector<NDArray> inn;
      for (const NDArray& a : in) inn.push_back(a.AsType(t));
      std::vector<NDArray> outs{Run("ones_like", {y.AsType(t)})};
      InvokeOptions add;
      add.req = {kAddTo};
      Invoke(MakeAttrs("Convolution", c.params), inn, &outs, add);
      std::vector<double> want = y.ToVector();
      for (double& v : want) v += 1;
      CheckClose(outs[0], want, 1e-4, 1e-4);

      std::vector<NDArray> g = tessera::Invoke("_backward_Convolution",
                                               {og.AsType(t), x.AsType(t), w.AsType(t)}, c.params);
      std::vector<NDArray> gacc;
      for (const NDArray& a : g) gacc.push_back(Run("ones_like", {a}));
      InvokeOptions add3;
      add3.req = std::vector<OpReqType>(g.size(), kAddTo);
      Invoke(MakeAttrs("_backward_Convolution", c.params), {og.AsType(t), x.AsType(t), w.AsType(t)},
             &gacc, add3);
      for (size_t k = 0; k < g.size(); ++k) {
        std::vector<double> gw = g[k].ToVector();
        for (double& v : gw) v += 1;
        CheckClose(gacc[k], gw, 1e-4, 1e-4);
      }
    }
  }
}

// Runs body with each float32 algorithm forced, then with the choice left to
// measurement; the setting is read when the ops run, so each round waits for
// everything before the next.
template <typename Body>
void ForEachConvAlgo(Body body) {
  for (op::ConvAlgo a : {op::ConvAlgo::kOneDnn, op::ConvAlgo::kGemm, op::ConvAlgo::kAuto}) {
    INFO("float32 convolution algorithm " << std::string(op::ConvAlgoName(a)));
    const op::ConvAlgo old = op::SetConvAlgo(a);
    body();
    engine::Engine::Get()->WaitForAll();
    op::SetConvAlgo(old);
  }
}

}  // namespace

TEST_CASE("Convolution float32 (oneDNN, batched GEMM) matches the float64 reference") {
  std::vector<ConvCase> cases = {
      {{2, 3, 7, 6}, {{"kernel", "(3,3)"}, {"num_filter", "4"}}, 3, {3, 3}},
      {{2, 4, 9, 8},
       {{"kernel", "(3,2)"},
        {"num_filter", "6"},
        {"stride", "(2,1)"},
        {"pad", "(1,0)"},
        {"dilate", "(1,2)"},
        {"num_group", "2"}},
       2,
       {3, 2}},
      {{2, 4, 6, 6},
       {{"kernel", "(3,3)"},
        {"num_filter", "4"},
        {"num_group", "4"},
        {"pad", "(1,1)"},
        {"no_bias", "True"}},
       1,
       {3, 3}},
      {{3, 2, 10},
       {{"kernel", "(3,)"}, {"num_filter", "5"}, {"stride", "(2,)"}, {"pad", "(1,)"}},
       2,
       {3}},
      {{2, 16, 8, 8}, {{"kernel", "(3,3)"}, {"num_filter", "16"}, {"pad", "(1,1)"}}, 16, {3, 3}},
      // Few output positions, many weights: where measurement considers the
      // GEMM (channels x kernel >= batch x positions).
      {{2, 32, 2, 3}, {{"kernel", "(3,3)"}, {"num_filter", "24"}, {"pad", "(1,1)"}}, 32, {3, 3}},
      // The GEMM path in two chunks (2 images, then 1): 200x200 maps of 35
      // rows exceed its budget for the whole batch.
      {{3, 3, 200, 200},
       {{"kernel", "(3,3)"}, {"num_filter", "8"}, {"pad", "(1,1)"}},
       3,
       {3, 3},
       1e-2},
  };
  ForEachConvAlgo([&] { CheckConvCases(cases); });
}

TEST_CASE("Convolution float32 reference kernels agree with oneDNN") {
  op::ParamDict p{{"kernel", "(3,3)"}, {"num_filter", "6"}, {"num_group", "2"},
                  {"pad", "(1,2)"},    {"stride", "(2,1)"}, {"dilate", "(1,2)"}};
  NDArray x = RandomArray({2, 4, 7, 9}, -1, 1, DType::kFloat32, 40);
  NDArray w = RandomArray({6, 2, 3, 3}, -1, 1, DType::kFloat32, 41);
  NDArray b = RandomArray({6}, -1, 1, DType::kFloat32, 42);
  NDArray y = Run("Convolution", {x, w, b}, p);
  NDArray og = RandomArray(y.shape(), -1, 1, DType::kFloat32, 43);
  std::vector<NDArray> g = tessera::Invoke("_backward_Convolution", {og, x, w}, p);
  const op::ConvAlgo old = op::SetConvAlgo(op::ConvAlgo::kReference);
  NDArray yr = Run("Convolution", {x, w, b}, p);
  std::vector<NDArray> gr = tessera::Invoke("_backward_Convolution", {og, x, w}, p);
  // The flag is read when the ops run (on the engine): wait before restoring it.
  yr.WaitToRead();
  for (const NDArray& a : gr) a.WaitToRead();
  op::SetConvAlgo(old);
  CheckClose(yr, y.ToVector(), 1e-4, 1e-4);
  for (size_t k = 0; k < g.size(); ++k) CheckClose(gr[k], g[k].ToVector(), 1e-4, 1e-4);
}

#ifdef _OPENMP
// The threads of this process (the entries of /proc/self/task).
size_t ProcessThreads() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// oneDNN fixes a primitive's team size when it builds it. A thread that runs
// a team of 2 keeps a helper thread of its OpenMP runtime's pool; one that
// asks for 1 must start none, although the same geometry ran on 2 before.
TEST_CASE("oneDNN convolutions run on their call's thread count, not their first call's") {
  op::ConvGeom g;
  g.n = 2, g.c = 16, g.h = g.w = 8, g.f = 16, g.kh = g.kw = 3, g.ph = g.pw = 1, g.oh = g.ow = 8;
  g.bias = false;
  std::vector<float> x(2 * 16 * 8 * 8, 0.5f), w(16 * 16 * 3 * 3, 0.25f), y(x.size()), gx(x.size()),
      gw(w.size());
  const op::Resource temp = resource::ResourceManager::Get()->Request(
      Context::CPU(), resource::ResourceRequest::kTempSpace);
  auto run = [&](int threads) {
    const op::OpContext ctx{true, RunContext{Context::CPU(), nullptr, threads}, {temp}, nullptr};
    op::DnnlConvForward(g, ctx, x.data(), w.data(), nullptr, y.data(), kWriteTo);
    op::DnnlConvBackward(g, ctx, y.data(), x.data(), w.data(), gx.data(), kWriteTo, gw.data(),
                         kWriteTo, nullptr, kNullOp);
  };
  run(2);
  size_t before = 0, after = 0;
  std::thread one([&] {
    before = ProcessThreads();
    run(1);
    after = ProcessThreads();
  });
  one.join();
  CHECK(after == before);
  // The values do not depend on the team: 16 channels x 9 taps x 0.5 x 0.25
  // at an interior position.
  CHECK(y[8 * 3 + 3] == doctest::Approx(18.0));
}
#endif

TEST_CASE("Convolution gradients match finite differences (float64 reference)") {
  CHECK(CheckNumericGradient(
      "Convolution", {{"kernel", "(3,3)"}, {"num_filter", "3"}},
      {RandomArray({2, 2, 5, 4}, -1, 1), RandomArray({3, 2, 3, 3}, -1, 1, DType::kFloat64, 2),
       RandomArray({3}, -1, 1, DType::kFloat64, 3)}));
  CHECK(CheckNumericGradient("Convolution",
                             {{"kernel", "(2,3)"},
                              {"num_filter", "4"},
                              {"num_group", "2"},
                              {"stride", "(2,1)"},
                              {"pad", "(1,1)"},
                              {"dilate", "(2,1)"}},
                             {RandomArray({1, 4, 6, 5}, -1, 1, DType::kFloat64, 4),
                              RandomArray({4, 2, 2, 3}, -1, 1, DType::kFloat64, 5),
                              RandomArray({4}, -1, 1, DType::kFloat64, 6)}));
  CHECK(CheckNumericGradient("Convolution",
                             {{"kernel", "(3,)"},
                              {"num_filter", "2"},
                              {"no_bias", "True"},
                              {"pad", "(2,)"},
                              {"stride", "(2,)"}},
                             {RandomArray({2, 3, 7}, -1, 1, DType::kFloat64, 7),
                              RandomArray({2, 3, 3}, -1, 1, DType::kFloat64, 8)}));
  // Depthwise.
  CHECK(CheckNumericGradient(
      "Convolution",
      {{"kernel", "(3,3)"}, {"num_filter", "3"}, {"num_group", "3"}, {"pad", "(1,1)"}},
      {RandomArray({1, 3, 4, 4}, -1, 1, DType::kFloat64, 9),
       RandomArray({3, 1, 3, 3}, -1, 1, DType::kFloat64, 10),
       RandomArray({3}, -1, 1, DType::kFloat64, 11)}));
}

TEST_CASE("Convolution parameter errors name the op, the parameter and the shapes") {
  NDArray x = Array({1, 3, 4, 4}, std::vector<double>(48, 1.0));
  NDArray w = Array({2, 3, 3, 3}, std::vector<double>(54, 1.0));
  auto err = [&](op::ParamDict p, std::vector<NDArray> in) {
    return ErrorOf([&] { Run("Convolution", in, p); });
  };
  std::string e = err({{"kernel", "(5,5)"}, {"num_filter", "2"}, {"no_bias", "True"}}, {x, w});
  CHECK(Contains(e, "Convolution"));
  CHECK(Contains(e, "kernel"));
  CHECK(Contains(e, "(1,3,4,4)"));
  e = err({{"kernel", "(3,3)"}, {"num_filter", "2"}, {"num_group", "2"}, {"no_bias", "True"}},
          {x, w});
  CHECK(Contains(e, "num_group"));
  e = err({{"kernel", "(3,3)"}, {"num_filter", "2"}, {"no_bias", "True"}},
          {Array({3, 4, 4}, std::vector<double>(48, 1.0)), w});
  CHECK(Contains(e, "(3,4,4)"));
  e = err({{"kernel", "(3,3)"}, {"num_filter", "2"}, {"no_bias", "True"}},
          {x, Array({2, 2, 3, 3}, std::vector<double>(36, 1.0))});
  CHECK(Contains(e, "weight"));
  CHECK(Contains(e, "(2,2,3,3)"));
  e = err({{"kernel", "(3,3)"}, {"num_filter", "2"}, {"stride", "(1,1,1)"}, {"no_bias", "True"}},
          {x, w});
  CHECK(Contains(e, "stride"));
  CHECK(Contains(ErrorOf([&] {
                   Run("Convolution", {x, w}, {{"kernel", "(3,3)"}});
                 }),
                 "num_filter"));
  CHECK(Contains(
      err({{"kernel", "(3,3)"}, {"num_filter", "2"}, {"no_bias", "True"}, {"layout", "NHWC"}},
          {x, w}),
      "layout"));
}

TEST_CASE("Pooling values, conventions and shapes") {
  NDArray x = Array({1, 1, 4, 4}, Iota(16, 1));
  for (DType t : {DType::kFloat32, DType::kFloat64}) {
    NDArray xt = x.AsType(t);
    CheckClose(Run("Pooling", {xt}, {{"kernel", "(2,2)"}, {"stride", "(2,2)"}}), {6, 8, 14, 16});
    CheckClose(
        Run("Pooling", {xt}, {{"kernel", "(2,2)"}, {"stride", "(2,2)"}, {"pool_type", "avg"}}),
        {3.5, 5.5, 11.5, 13.5});
    CheckClose(
        Run("Pooling", {xt}, {{"kernel", "(2,2)"}, {"stride", "(2,2)"}, {"pool_type", "sum"}}),
        {14, 22, 46, 54});
    // 'valid' drops the last partial window, 'full' keeps it (clipped).
    NDArray v = Run("Pooling", {xt}, {{"kernel", "(3,3)"}, {"stride", "(2,2)"}});
    CHECK(v.shape() == Shape{1, 1, 1, 1});
    NDArray f = Run("Pooling", {xt},
                    {{"kernel", "(3,3)"}, {"stride", "(2,2)"}, {"pooling_convention", "full"}});
    CHECK(f.shape() == Shape{1, 1, 2, 2});
    CheckClose(f, {11, 12, 15, 16});
    NDArray fa = Run("Pooling", {xt},
                     {{"kernel", "(3,3)"},
                      {"stride", "(2,2)"},
                      {"pooling_convention", "full"},
                      {"pool_type", "avg"}});
    // Windows clipped at the edge divide by the clipped size (no padding).
    CheckClose(fa, {6, 7.5, 12, 13.5});
    // Padding: avg counts it unless count_include_pad = False.
    NDArray pa =
        Run("Pooling", {xt},
            {{"kernel", "(2,2)"}, {"stride", "(2,2)"}, {"pad", "(1,1)"}, {"pool_type", "avg"}});
    CHECK(pa.shape() == Shape{1, 1, 3, 3});
    CheckClose(pa, {0.25, 1.25, 1, 3.5, 8.5, 5, 3.25, 7.25, 4});
    NDArray pe = Run("Pooling", {xt},
                     {{"kernel", "(2,2)"},
                      {"stride", "(2,2)"},
                      {"pad", "(1,1)"},
                      {"pool_type", "avg"},
                      {"count_include_pad", "False"}});
    CheckClose(pe, {1, 2.5, 4, 7, 8.5, 10, 13, 14.5, 16});
    NDArray gp = Run("Pooling", {xt}, {{"global_pool", "True"}, {"pool_type", "avg"}});
    CHECK(gp.shape() == Shape{1, 1, 1, 1});
    CheckClose(gp, {8.5});
    NDArray g1 =
        Run("Pooling", {Array({1, 2, 3}, {1, 5, 2, -1, -3, -2}, t)}, {{"global_pool", "True"}});
    CHECK(g1.shape() == Shape{1, 2, 1});
    CheckClose(g1, {5, -1});
  }
  // 1-D.
  NDArray y = Run("Pooling", {Array({1, 1, 5}, {1, 3, 2, 5, 4})}, {{"kernel", "(2,)"}});
  CheckClose(y, {3, 3, 5, 5});
  // Errors.
  CHECK(Contains(ErrorOf([&] { Run("Pooling", {x}, {{"kernel", "(5,5)"}}); }), "(1,1,4,4)"));
  CHECK(Contains(ErrorOf([&] { Run("Pooling", {x}, {{"kernel", "(2,2,2)"}}); }), "Pooling"));
  CHECK(Contains(ErrorOf([&] {
                   Run("Pooling", {x}, {{"kernel", "(2,2)"}, {"pool_type", "lp"}});
                 }),
                 "lp"));
  CHECK(Contains(ErrorOf([&] {
                   Run("Pooling", {x}, {{"kernel", "(2,2)"}, {"pool_type", "min"}});
                 }),
                 "pool_type"));
}

TEST_CASE("Convolution, Deconvolution and Pooling read spatial parameters alike") {
  NDArray x = Array({1, 3, 4, 4}, std::vector<double>(48, 1.0));
  NDArray x1 = Array({1, 2, 4}, std::vector<double>(8, 1.0));
  // 1-D: padding applies along the width only.
  CHECK(Run("Pooling", {x1}, {{"kernel", "(2,)"}, {"pad", "(1,)"}}).shape() == Shape{1, 2, 5});
  CHECK(Run("Deconvolution", {x1, Array({2, 3, 3}, std::vector<double>(18, 1.0))},
            {{"kernel", "(3,)"}, {"stride", "(2,)"}, {"pad", "(1,)"}, {"num_filter", "3"}})
            .shape() == Shape{1, 3, 7});
  const std::string deconv = ErrorOf([&] {
    Run("Deconvolution", {x, Array({3, 2, 3, 3}, std::vector<double>(54, 1.0))},
        {{"kernel", "(3,3)"}, {"stride", "(0,1)"}, {"num_filter", "2"}});
  });
  CHECK(Contains(deconv, "Deconvolution"));
  CHECK(Contains(deconv, "'stride' is (0,1), every value must be >= 1"));
  const std::string pool = ErrorOf([&] {
    Run("Pooling", {x}, {{"kernel", "(2,2)"}, {"stride", "(2,)"}});
  });
  CHECK(Contains(pool, "'stride' is (2,), expected 2 value(s) for data of shape (1,3,4,4)"));
  CHECK(Contains(ErrorOf([&] {
                   Run("Pooling", {x}, {{"kernel", "(2,2)"}, {"layout", "NHWC"}});
                 }),
                 "NCHW"));
}

TEST_CASE("float32 Pooling backward on oneDNN matches the float64 loop") {
  // Distinct values: every max is unique, so both find the same one.
  const Shape s{2, 3, 11, 9};
  std::vector<double> v(static_cast<size_t>(s.Size()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(double(i) * 1.7) + 1e-3 * double(i);
  NDArray x = Array(s, v, DType::kFloat64);
  NDArray x1 = Array({2, 3, 99}, v, DType::kFloat64);
  const std::vector<std::pair<op::ParamDict, NDArray>> cases{
      {{{"kernel", "(3,3)"}, {"stride", "(2,2)"}, {"pad", "(1,1)"}}, x},
      {{{"kernel", "(3,2)"}, {"stride", "(1,2)"}, {"pool_type", "avg"}}, x},
      {{{"kernel", "(3,3)"},
        {"stride", "(2,2)"},
        {"pad", "(1,1)"},
        {"pool_type", "avg"},
        {"count_include_pad", "False"}},
       x},
      {{{"kernel", "(3,3)"}, {"stride", "(2,2)"}, {"pooling_convention", "full"}}, x},
      {{{"kernel", "(4,)"}, {"stride", "(3,)"}}, x1},
  };
  for (const auto& [p, data] : cases) {
    std::vector<NDArray> y = Invoke("Pooling", {data}, p);
    NDArray g = RandomArray(y[0].shape(), -1, 1);
    std::vector<NDArray> in{g, data, y[0]};
    if (y.size() > 1) in.push_back(y[1]);
    NDArray want = Invoke("_backward_Pooling", in, p)[0];
    for (size_t i = 0; i < 3; ++i) in[i] = in[i].AsType(DType::kFloat32);
    if (y.size() > 1) in[3] = Invoke("Pooling", {in[1]}, p)[1];  // flag 0: no positions kept
    NDArray got = Invoke("_backward_Pooling", in, p)[0];
    CheckClose(got, want.ToVector(), 1e-5, 1e-6);
  }
}

// Max pooling's hidden workspace: a training forward on oneDNN keeps the
// positions of the maxima and sets its last byte; an inference forward, or
// one on another dtype, leaves them out (0); either way the backward routes
// each gradient to the first maximum of its window, as the float64 loop.
TEST_CASE("max Pooling's workspace carries the forward's maxima to the backward") {
  InvokeOptions train;
  train.is_train = true;
  // Ties: a constant block and repeated values, so the first max must win.
  std::vector<double> v(2 * 3 * 8 * 10);
  for (size_t i = 0; i < v.size(); ++i) v[i] = i % 7 < 3 ? 1.0 : double(i % 5);
  NDArray x64 = Array({2, 3, 8, 10}, v, DType::kFloat64), x = x64.AsType(DType::kFloat32);
  for (const op::ParamDict& p :
       std::vector<op::ParamDict>{{{"kernel", "(2,2)"}, {"stride", "(2,2)"}},
                                  {{"kernel", "(3,3)"}, {"stride", "(2,2)"}, {"pad", "(1,1)"}},
                                  {{"kernel", "(3,3)"}, {"stride", "(1,1)"}},
                                  {{"global_pool", "True"}}}) {
    INFO(p.begin()->second);
    std::vector<NDArray> y64 = Invoke("Pooling", {x64}, p, train);
    REQUIRE(y64.size() == 2);
    CHECK(y64[1].dtype() == DType::kUint8);
    CHECK(y64[1].ToVector().back() == 0);  // float64 runs the loop
    NDArray g64 = RandomArray(y64[0].shape(), -1, 1);
    const auto want = Invoke("_backward_Pooling", {g64, x64, y64[0], y64[1]}, p)[0].ToVector();
    std::vector<NDArray> yt = Invoke("Pooling", {x}, p, train), yi = Invoke("Pooling", {x}, p);
    CHECK(yt[1].ToVector().back() == 1);
    CHECK(yi[1].ToVector().back() == 0);
    CheckClose(yt[0], y64[0].ToVector());
    NDArray g = g64.AsType(DType::kFloat32);
    CheckClose(Invoke("_backward_Pooling", {g, x, yt[0], yt[1]}, p)[0], want);
    CheckClose(Invoke("_backward_Pooling", {g, x, yi[0], yi[1]}, p)[0], want);
  }
  // Avg pooling has none; the backward of max pooling wants it.
  CHECK(Invoke("Pooling", {x}, {{"kernel", "(2,2)"}, {"pool_type", "avg"}}).size() == 1);
  CHECK(Contains(ErrorOf([&] {
                   Invoke("_backward_Pooling", {x, x, x}, {{"kernel", "(2,2)"}});
                 }),
                 "takes 4 inputs"));
}

TEST_CASE("an op given only its visible outputs makes the hidden ones") {
  NDArray x = IotaArray({1, 1, 4, 4});
  std::vector<NDArray> out{NDArray(Shape{1, 1, 2, 2}, Context::CPU(), DType::kFloat32)};
  Invoke(MakeAttrs("Pooling", {{"kernel", "(2,2)"}, {"stride", "(2,2)"}}), {x}, &out);
  REQUIRE(out.size() == 2);
  CheckClose(out[0], {5, 7, 13, 15});
  std::vector<NDArray> three(3, out[0]);
  CHECK(Contains(ErrorOf([&] {
                   Invoke(MakeAttrs("Pooling", {{"kernel", "(2,2)"}}), {x}, &three);
                 }),
                 "produces 2 outputs (1 visible), 3 given"));
}

TEST_CASE("Pooling gradients match finite differences") {
  // Distinct values so that every max is unique.
  std::vector<double> v(2 * 3 * 5 * 5);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(double(i) * 1.7) + 0.001 * double(i);
  NDArray x = Array({2, 3, 5, 5}, v, DType::kFloat64);
  for (const char* type : {"max", "avg", "sum"}) {
    INFO(type);
    CHECK(CheckNumericGradient("Pooling", {{"kernel", "(2,2)"}, {"pool_type", type}}, {x}));
    CHECK(CheckNumericGradient("Pooling",
                               {{"kernel", "(3,3)"},
                                {"stride", "(2,2)"},
                                {"pad", "(1,1)"},
                                {"pool_type", type},
                                {"pooling_convention", "full"}},
                               {x}));
    CHECK(CheckNumericGradient("Pooling",
                               {{"kernel", "(3,2)"},
                                {"stride", "(2,2)"},
                                {"pad", "(1,1)"},
                                {"pool_type", type},
                                {"count_include_pad", "False"}},
                               {x}));
    CHECK(CheckNumericGradient("Pooling", {{"global_pool", "True"}, {"pool_type", type}}, {x}));
    CHECK(CheckNumericGradient(
        "Pooling", {{"kernel", "(3,)"}, {"pool_type", type}},
        {Array({2, 2, 7}, std::vector<double>(v.begin(), v.begin() + 28), DType::kFloat64)}));
  }
  // float32 (oneDNN where its semantics agree, else the plain kernel) against float64.
  const std::vector<op::ParamDict> f32_cases = {
      {{"kernel", "(3,3)"}, {"stride", "(2,2)"}, {"pooling_convention", "full"}},
      {{"kernel", "(3,3)"}, {"stride", "(2,2)"}, {"pad", "(1,1)"}},
      {{"kernel", "(3,3)"}, {"stride", "(2,2)"}, {"pad", "(1,1)"}, {"pooling_convention", "full"}},
      {{"kernel", "(2,3)"}, {"stride", "(1,2)"}, {"pad", "(1,1)"}, {"count_include_pad", "False"}},
      {{"kernel", "(2,2)"}, {"stride", "(2,2)"}},
      {{"global_pool", "True"}},
  };
  for (const op::ParamDict& base : f32_cases)
    for (const char* type : {"max", "avg", "sum"}) {
      op::ParamDict p = base;
      p["pool_type"] = type;
      INFO(type << " " << p.begin()->second);
      CheckF32AgainstF64("Pooling", {x}, p, 1);
    }
}

TEST_CASE("BatchNorm training, inference, moving statistics and gradients") {
  NDArray x = Array({3, 2}, {1, 2, 3, 4, 5, 6});
  NDArray gamma = Array({2}, {2, 3}), beta = Array({2}, {0.5, -1});
  NDArray mm = Array({2}, {0, 0}), mv = Array({2}, {1, 1});
  // Inference: the moving statistics normalise; fix_gamma (default) uses 1.
  NDArray y = Run("BatchNorm", {x, gamma, beta, mm, mv}, {{"axis", "1"}, {"eps", "0"}});
  CheckClose(y, {1.5, 1, 3.5, 3, 5.5, 5});
  CheckClose(mm, {0, 0});
  // Training: batch statistics, moving statistics updated with momentum.
  std::vector<NDArray> outs;
  InvokeOptions train;
  train.is_train = true;
  Invoke(MakeAttrs("BatchNorm", {{"fix_gamma", "False"},
                                 {"momentum", "0.75"},
                                 {"output_mean_var", "True"},
                                 {"eps", "1e-5"}}),
         {x, gamma, beta, mm, mv}, &outs, train);
  const double var = 8.0 / 3.0, inv = 1 / std::sqrt(var + 1e-5), a = 2 * inv;
  CheckClose(outs[0], {-a * 2 + 0.5, -3 * inv * 2 - 1, 0.5, -1, a * 2 + 0.5, 3 * inv * 2 - 1},
             1e-5);
  CheckClose(outs[1], {3, 4});
  CheckClose(outs[2], {inv, inv}, 1e-5);
  CheckClose(mm, {0.75, 1.0});
  CheckClose(mv, {0.75 + 0.25 * var, 0.75 + 0.25 * var}, 1e-5);
  // use_global_stats in training leaves the states alone.
  Invoke(MakeAttrs("BatchNorm", {{"use_global_stats", "True"}}), {x, gamma, beta, mm, mv}, &outs,
         train);
  CheckClose(mm, {0.75, 1.0});

  // Gradients in inference mode (the aux states are not differentiated).
  GradCheckOptions opt;
  opt.check_inputs = {true, true, true, false, false};
  NDArray x4 = RandomArray({2, 3, 2, 2}, -1, 1, DType::kFloat64, 21);
  auto ch = [](uint64_t s, double lo, double hi) {
    return RandomArray({3}, lo, hi, DType::kFloat64, s);
  };
  CHECK(CheckNumericGradient("BatchNorm", {{"fix_gamma", "False"}},
                             {x4, ch(22, 0.5, 1.5), ch(23, -1, 1), ch(24, -1, 1), ch(25, 0.5, 1.5)},
                             opt));
  CHECK(CheckNumericGradient("BatchNorm", {{"axis", "-1"}, {"eps", "0.01"}},
                             {RandomArray({2, 2, 3}, -1, 1, DType::kFloat64, 26), ch(27, 0.5, 1.5),
                              ch(28, -1, 1), ch(29, -1, 1), ch(30, 0.5, 1.5)},
                             opt));

  // Training-mode backward against known values: d/dx of sum(w * y) for
  // batch statistics (data of one channel: y = (x - mean) * invstd).
  NDArray xs = Array({4, 1}, {1, 2, 4, 7}, DType::kFloat64);
  NDArray w = Array({4, 1}, {0.5, -1, 2, 0.25}, DType::kFloat64);
  std::vector<NDArray> fw;
  Invoke(MakeAttrs("BatchNorm", {{"eps", "0"}}),
         {xs, Array({1}, {1}, DType::kFloat64), Array({1}, {0}, DType::kFloat64),
          Array({1}, {0}, DType::kFloat64), Array({1}, {1}, DType::kFloat64)},
         &fw, train);
  std::vector<NDArray> g;
  Invoke(MakeAttrs("_backward_BatchNorm", {{"eps", "0"}}),
         {w, xs, Array({1}, {1}, DType::kFloat64), fw[1], fw[2]}, &g, train);
  // Central differences of the training forward.
  std::vector<double> xv{1, 2, 4, 7}, wv{0.5, -1, 2, 0.25}, num(4);
  auto loss = [&](std::vector<double> v) {
    double m = 0, s = 0, l = 0;
    for (double e : v) m += e / 4;
    for (double e : v) s += (e - m) * (e - m) / 4;
    for (size_t i = 0; i < 4; ++i) l += wv[i] * (v[i] - m) / std::sqrt(s);
    return l;
  };
  for (size_t i = 0; i < 4; ++i) {
    auto p = xv, q = xv;
    p[i] += 1e-5;
    q[i] -= 1e-5;
    num[i] = (loss(p) - loss(q)) / 2e-5;
  }
  CheckClose(g[0], num, 1e-5, 1e-7);
  CheckClose(g[1], {0.0});  // fix_gamma
  CheckClose(g[2], {1.75});

  CHECK(Contains(ErrorOf([&] {
                   Run("BatchNorm", {x, gamma, beta, mm, Array({3}, {1, 1, 1})});
                 }),
                 "moving_var"));
  CHECK(Contains(ErrorOf([&] {
                   Run("BatchNorm", {x, gamma, beta, mm, mv}, {{"axis", "2"}});
                 }),
                 "axis"));
}
