// The executor: forward values against imperative calls, backward against
// numeric gradients (grad_req write, add, null), gradients of inputs used
// twice, stateful ops, the memory plan (in place, sharing, the 10-layer
// network against the unshared plan), Reshape, DebugStr and the errors.
#include <doctest/doctest.h>

#include <cmath>

#include "engine/graph/graph_executor.h"
#include "tests/cpp/op_test_util.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using graph::Executor;
using graph::GraphExecutor;
using graph::Symbol;
using test::CheckClose;
using test::Contains;
using test::ErrorOf;
using test::RandomArray;
using test::Run;

namespace {

Symbol Var(const std::string& name) {
  return Symbol::Variable(name);
}
Symbol Apply(const char* op, const std::vector<Symbol>& args, op::ParamDict params = {},
             std::string name = "") {
  return Symbol::Create(op::Op::Get(op), std::move(params), args, {}, std::move(name));
}

// One layer of the networks below: relu(dot(x, w) + b).
Symbol Layer(const Symbol& x, int i) {
  const std::string n = std::to_string(i);
  Symbol fc = Apply("dot", {x, Var("w" + n)}, {}, "fc" + n);
  Symbol add = Apply("broadcast_add", {fc, Var("b" + n)}, {}, "add" + n);
  return Apply("relu", {add}, {}, "relu" + n);
}
// `layers` layers, then log_softmax: arguments data, w1, b1, w2, b2, ...
Symbol Net(int layers) {
  Symbol x = Var("data");
  for (int i = 1; i <= layers; ++i) x = Layer(x, i);
  return Apply("log_softmax", {x}, {}, "out");
}
// The shapes of Net's arguments: data (batch, width), w (width, width), b (width).
std::map<std::string, Shape> NetShapes(int layers, int64_t batch, int64_t width) {
  std::map<std::string, Shape> s{{"data", {batch, width}}};
  for (int i = 1; i <= layers; ++i) {
    s["w" + std::to_string(i)] = {width, width};
    s["b" + std::to_string(i)] = {width};
  }
  return s;
}

// Random values into every argument (float64, distinct seeds).
void Randomize(const std::vector<NDArray>& arrays, uint64_t seed = 7) {
  for (const NDArray& a : arrays) CopyFromTo(RandomArray(a.shape(), -1, 1, a.dtype(), seed++), a);
}

// The forward of Net imperatively, from the executor's argument arrays.
NDArray ImperativeNet(int layers, const std::vector<NDArray>& args) {
  NDArray x = args[0];
  for (int i = 0; i < layers; ++i) {
    x = Run("dot", {x, args[1 + 2 * i]});
    x = Run("broadcast_add", {x, args[2 + 2 * i]});
    x = Run("relu", {x});
  }
  return Run("log_softmax", {x});
}

double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Central differences of L = sum_k <outputs_k, heads_k> with respect to
// argument `arg`, through the executor's own forward (float64 arguments).
std::vector<double> NumericGrad(Executor& exe, size_t arg, const std::vector<NDArray>& heads,
                                double eps = 1e-6) {
  auto loss = [&] {
    exe.Forward(false);
    double l = 0;
    for (size_t k = 0; k < heads.size(); ++k)
      l += Dot(exe.outputs()[k].ToVector(), heads[k].ToVector());
    return l;
  };
  const NDArray& a = exe.arg_arrays()[arg];
  std::vector<double> v = a.ToVector(), g(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const double keep = v[i];
    v[i] = keep + eps;
    a.SyncCopyFromCPU(v.data(), v.size());
    const double lp = loss();
    v[i] = keep - eps;
    a.SyncCopyFromCPU(v.data(), v.size());
    const double lm = loss();
    v[i] = keep;
    a.SyncCopyFromCPU(v.data(), v.size());
    g[i] = (lp - lm) / (2 * eps);
  }
  return g;
}

std::map<std::string, DType> AllFloat64(const Symbol& sym) {
  std::map<std::string, DType> t;
  for (const std::string& name : sym.ListArguments()) t[name] = DType::kFloat64;
  return t;
}

}  // namespace

TEST_CASE("forward matches the imperative calls; outputs stay readable after backward") {
  const Symbol net = Net(2);
  auto exe = Executor::SimpleBind(net, Context::CPU(), NetShapes(2, 4, 5));
  CHECK(exe->arg_arrays().size() == 5);
  Randomize(exe->arg_arrays());
  exe->Forward(false);
  const std::vector<double> expected = ImperativeNet(2, exe->arg_arrays()).ToVector();
  CHECK(exe->outputs().size() == 1);
  CHECK(exe->outputs()[0].shape() == Shape{4, 5});
  CHECK(CheckClose(exe->outputs()[0], expected));

  exe->Forward(true);
  exe->Backward({});
  CHECK(CheckClose(exe->outputs()[0], expected));  // backward reuses memory, not the outputs'
}

TEST_CASE("backward matches numeric gradients; grad_req write") {
  const Symbol net = Net(2);
  auto exe =
      Executor::SimpleBind(net, Context::CPU(), NetShapes(2, 3, 4), AllFloat64(net), {}, kWriteTo);
  Randomize(exe->arg_arrays());
  const NDArray head = RandomArray({3, 4}, -1, 1, DType::kFloat64, 99);
  exe->Forward(true);
  exe->Backward({head});
  std::vector<std::vector<double>> grads;
  for (const NDArray& g : exe->grad_arrays()) grads.push_back(g.ToVector());
  for (size_t a = 0; a < exe->arg_arrays().size(); ++a) {
    CAPTURE(net.ListArguments()[a]);
    CHECK(CheckClose(grads[a], NumericGrad(*exe, a, {head}), 1e-4, 1e-6));
  }
}

TEST_CASE("grad_req add accumulates; null leaves the array untouched") {
  const Symbol net = Net(1);
  const std::vector<std::string> names = net.ListArguments();  // data, w1, b1
  REQUIRE(names == std::vector<std::string>{"data", "w1", "b1"});
  std::vector<NDArray> args, grads;
  for (const Shape& s : {Shape{3, 4}, Shape{4, 4}, Shape{4}}) {
    args.push_back(RandomArray(s, -1, 1, DType::kFloat64, args.size() + 3));
    grads.push_back(RandomArray(s, -1, 1, DType::kFloat64, args.size() + 30));
  }
  const std::vector<double> data_grad_before = grads[0].ToVector();
  const std::vector<double> w_before = grads[1].ToVector();

  // The reference: write.
  auto ref = Executor::Bind(net, Context::CPU(), args,
                            {NDArray(), NDArray({4, 4}, Context::CPU(), DType::kFloat64),
                             NDArray({4}, Context::CPU(), DType::kFloat64)},
                            {kNullOp, kWriteTo, kWriteTo}, {});
  const NDArray head = RandomArray({3, 4}, -1, 1, DType::kFloat64, 5);
  ref->Forward(true);
  ref->Backward({head});
  const std::vector<double> gw = ref->grad_arrays()[1].ToVector();
  const std::vector<double> gb = ref->grad_arrays()[2].ToVector();

  auto exe = Executor::Bind(net, Context::CPU(), args, grads, {kNullOp, kAddTo, kWriteTo}, {});
  for (int round = 0; round < 2; ++round) {
    exe->Forward(true);
    exe->Backward({head});
  }
  std::vector<double> expected = w_before;
  for (size_t i = 0; i < expected.size(); ++i) expected[i] += 2 * gw[i];
  CHECK(CheckClose(grads[1], expected));  // add, twice: doubled, on top of what was there
  CHECK(CheckClose(grads[2], gb));        // write
  CHECK(CheckClose(grads[0], data_grad_before, 0, 0));  // null: untouched
}

TEST_CASE("a gradient nobody asked for is not computed; the others are unchanged") {
  const Symbol net = Net(2);
  const auto shapes = NetShapes(2, 3, 4);
  const std::map<std::string, DType> types = AllFloat64(net);
  auto all = Executor::SimpleBind(net, Context::CPU(), shapes, types);
  auto no_data = Executor::SimpleBind(net, Context::CPU(), shapes, types, {{"data", kNullOp}});
  // The first layer's backward no longer writes the gradient of data.
  CHECK_FALSE(Contains(all->DebugStr(), "not computed"));
  CHECK(Contains(no_data->DebugStr(), "not computed"));
  Randomize(all->arg_arrays());
  no_data->CopyParamsFrom(all->ArgDict());
  const NDArray head = RandomArray({3, 4}, -1, 1, DType::kFloat64, 9);
  for (auto* exe : {all.get(), no_data.get()}) {
    exe->Forward(true);
    exe->Backward({head});
  }
  for (size_t i = 1; i < all->grad_arrays().size(); ++i)
    CHECK(CheckClose(no_data->grad_arrays()[i], all->grad_arrays()[i].ToVector(), 0, 0));
}

TEST_CASE("an input used several times gets the sum of its gradients") {
  // y = x * x + relu(x) + x: dy/dx = 2x + (x > 0) + 1.
  const Symbol x = Var("x");
  const Symbol sq = Apply("elemwise_mul", {x, x});
  const Symbol y = Apply("elemwise_add", {Apply("elemwise_add", {sq, Apply("relu", {x})}), x});
  auto exe = Executor::SimpleBind(y, Context::CPU(), {{"x", {2, 3}}}, {{"x", DType::kFloat64}});
  const std::vector<double> xv{-1.5, -0.5, 0.25, 0.5, 1, 2};
  exe->arg_arrays()[0].SyncCopyFromCPU(xv.data(), xv.size());
  exe->Forward(true);
  exe->Backward({});  // head gradient: ones
  std::vector<double> expected;
  for (double v : xv) expected.push_back(2 * v + (v > 0 ? 1 : 0) + 1);
  CHECK(CheckClose(exe->grad_arrays()[0], expected));
}

TEST_CASE("a symbol that is its own argument, and a gradient handed through add_n") {
  // out = add_n(x, x): the rule of add_n gives its output gradient to every
  // input, so the gradient of x is a sum of one entry twice.
  const Symbol x = Var("x");
  const Symbol s = Apply("add_n", {x, x}, {{"num_args", "2"}});
  auto exe = Executor::SimpleBind(s, Context::CPU(), {{"x", {3}}});
  const std::vector<float> xv{1, 2, 3};
  exe->arg_arrays()[0].SyncCopyFromCPU(xv.data(), 3);
  exe->Forward(true);
  exe->Backward({test::Array({3}, {1, 10, 100})});
  CHECK(CheckClose(exe->outputs()[0], {2, 4, 6}));
  CHECK(CheckClose(exe->grad_arrays()[0], {2, 20, 200}));

  auto id = Executor::SimpleBind(x, Context::CPU(), {{"x", {3}}});
  id->arg_arrays()[0].SyncCopyFromCPU(xv.data(), 3);
  id->Forward(true);
  id->Backward({test::Array({3}, {4, 5, 6})});
  CHECK(CheckClose(id->outputs()[0], {1, 2, 3}));
  CHECK(CheckClose(id->grad_arrays()[0], {4, 5, 6}));
}

TEST_CASE("a stateful op (SwapAxis, through the OperatorProperty adapter)") {
  const Symbol sym = Apply("SwapAxis", {Apply("broadcast_add", {Var("data"), Var("b")})},
                           {{"dim1", "0"}, {"dim2", "1"}});
  auto exe = Executor::SimpleBind(sym, Context::CPU(), {{"data", {2, 3}}, {"b", {3}}},
                                  {{"data", DType::kFloat64}, {"b", DType::kFloat64}});
  Randomize(exe->arg_arrays());
  exe->Forward(true);
  const NDArray expected =
      Run("SwapAxis", {Run("broadcast_add", exe->arg_arrays())}, {{"dim1", "0"}, {"dim2", "1"}});
  CHECK(CheckClose(exe->outputs()[0], expected.ToVector()));
  const NDArray head = RandomArray({3, 2}, -1, 1, DType::kFloat64, 4);
  exe->Backward({head});
  const std::vector<double> g0 = exe->grad_arrays()[0].ToVector();
  const std::vector<double> g1 = exe->grad_arrays()[1].ToVector();
  CHECK(CheckClose(g0, NumericGrad(*exe, 0, {head}), 1e-4, 1e-6));
  CHECK(CheckClose(g1, NumericGrad(*exe, 1, {head}), 1e-4, 1e-6));
}

TEST_CASE("the plan works in place and shares storage, and the values stay right") {
  const Symbol net = Net(3);
  auto exe = Executor::SimpleBind(net, Context::CPU(), NetShapes(3, 4, 6));
  auto& ge = dynamic_cast<GraphExecutor&>(*exe);
  const auto& plan = ge.plan();
  size_t inplace = 0;
  for (bool b : plan.inplace) inplace += b;
  MESSAGE("3 layers: " << ge.num_planned_entries() << " planned entries in " << plan.num_storage()
                       << " blocks, " << inplace << " in place");
  CHECK(inplace > 0);
  CHECK(plan.num_storage() < ge.num_planned_entries());
  CHECK(exe->planned_bytes() < exe->unshared_bytes());

  Randomize(exe->arg_arrays());
  exe->Forward(true);
  CHECK(CheckClose(exe->outputs()[0], ImperativeNet(3, exe->arg_arrays()).ToVector()));

  const std::string dbg = exe->DebugStr();
  CHECK(Contains(dbg, "inplace"));
  CHECK(Contains(dbg, "planned: "));
  CHECK(Contains(dbg, "unshared: "));
  CHECK(Contains(dbg, "fc1 (dot) <- [data, w1]"));
}

TEST_CASE("sharing does not change gradients (float64, 3 layers)") {
  const Symbol net = Net(3);
  auto exe = Executor::SimpleBind(net, Context::CPU(), NetShapes(3, 2, 3), AllFloat64(net));
  Randomize(exe->arg_arrays(), 21);
  const NDArray head = RandomArray({2, 3}, -1, 1, DType::kFloat64, 8);
  exe->Forward(true);
  exe->Backward({head});
  std::vector<std::vector<double>> grads;
  for (const NDArray& g : exe->grad_arrays()) grads.push_back(g.ToVector());
  for (size_t a = 0; a < grads.size(); ++a) {
    CAPTURE(net.ListArguments()[a]);
    CHECK(CheckClose(grads[a], NumericGrad(*exe, a, {head}), 1e-4, 1e-6));
  }
}

TEST_CASE("the 10-layer network's plan takes at most 60% of the unshared bytes") {
  const Symbol net = Net(10);
  std::map<std::string, OpReqType> req{{"data", kNullOp}};
  auto exe = Executor::SimpleBind(net, Context::CPU(), NetShapes(10, 64, 128), {}, req);
  const double planned = double(exe->planned_bytes()), unshared = double(exe->unshared_bytes());
  MESSAGE("10-layer dot/broadcast_add/relu + log_softmax, batch 64, width 128, with gradients: "
          << "planned " << graph::FormatBytes(exe->planned_bytes()) << " (" << exe->planned_bytes()
          << " bytes), unshared " << graph::FormatBytes(exe->unshared_bytes()) << " ("
          << exe->unshared_bytes() << " bytes), ratio " << planned / unshared);
  CHECK(planned <= 0.6 * unshared);
  // And it runs: forward and backward against the imperative forward.
  Randomize(exe->arg_arrays());
  for (size_t i = 1; i < exe->arg_arrays().size(); ++i) {
    // Keep activations in range: scale weights down.
    NDArray w = exe->arg_arrays()[i];
    CopyFromTo(Run("_mul_scalar", {w}, {{"scalar", "0.1"}}), w);
  }
  exe->Forward(true);
  exe->Backward({});
  CHECK(CheckClose(exe->outputs()[0], ImperativeNet(10, exe->arg_arrays()).ToVector(), 1e-4));
  size_t finite = 0, total = 0;
  for (const NDArray& g : exe->grad_arrays())
    if (!g.is_none())
      for (double v : g.ToVector()) {
        finite += std::isfinite(v);
        ++total;
      }
  CHECK(finite == total);
}

TEST_CASE("DebugStr: one line per node, then the plan against the unshared bytes") {
  auto exe = Executor::SimpleBind(Net(1), Context::CPU(), NetShapes(1, 2, 3));
  const std::string dbg = exe->DebugStr();
  MESSAGE(dbg);
  CHECK(Contains(dbg, "forward:\n"));
  CHECK(Contains(dbg, "backward:\n"));
  CHECK(Contains(dbg, "out (log_softmax) <- [relu1] -> (2,3) float32 [external]"));
}

TEST_CASE("an executor may go away while its pushes run; its outputs stay valid") {
  NDArray out;
  std::vector<NDArray> args;
  {
    auto exe = Executor::SimpleBind(Net(2), Context::CPU(), NetShapes(2, 16, 32));
    Randomize(exe->arg_arrays());
    args = exe->arg_arrays();
    exe->Forward(true);
    exe->Backward({});
    out = exe->outputs()[0];
  }
  CHECK(CheckClose(out, ImperativeNet(2, args).ToVector(), 1e-4));
}

TEST_CASE("reshape shares unchanged arguments, views smaller ones, allocates larger ones") {
  const Symbol net = Net(1);
  auto exe = Executor::SimpleBind(net, Context::CPU(), NetShapes(1, 4, 5));
  Randomize(exe->arg_arrays());

  auto bigger = exe->Reshape({{"data", {8, 5}}});
  CHECK(bigger->arg_arrays()[0].shape() == Shape{8, 5});
  CHECK(!bigger->arg_arrays()[0].SameChunk(exe->arg_arrays()[0]));
  for (size_t i = 1; i < 3; ++i) {
    CHECK(bigger->arg_arrays()[i].SameChunk(exe->arg_arrays()[i]));
    CHECK(bigger->grad_arrays()[i].SameChunk(exe->grad_arrays()[i]));
  }
  CHECK(bigger->outputs()[0].shape() == Shape{8, 5});

  auto smaller = exe->Reshape({{"data", {2, 5}}});
  CHECK(smaller->arg_arrays()[0].shape() == Shape{2, 5});
  CHECK(smaller->arg_arrays()[0].SameChunk(exe->arg_arrays()[0]));

  Randomize({bigger->arg_arrays()[0]}, 50);
  bigger->Forward(false);
  CHECK(CheckClose(bigger->outputs()[0], ImperativeNet(1, bigger->arg_arrays()).ToVector()));
  smaller->Forward(false);
  CHECK(CheckClose(smaller->outputs()[0], ImperativeNet(1, smaller->arg_arrays()).ToVector()));
  // The original still works, its own arguments untouched by the bigger one.
  exe->Forward(false);
  CHECK(CheckClose(exe->outputs()[0], ImperativeNet(1, exe->arg_arrays()).ToVector()));
}

TEST_CASE("errors name the argument, the output and the counts") {
  const Symbol net = Net(1);
  // A wrong shape for a weight.
  std::map<std::string, Shape> shapes = NetShapes(1, 4, 5);
  shapes["w1"] = {6, 5};
  std::string err = ErrorOf([&] { Executor::SimpleBind(net, Context::CPU(), shapes); });
  MESSAGE(err);
  CHECK(Contains(err, "simple_bind: "));
  CHECK(Contains(err, "'w1'"));
  // An unknown name, and a missing shape.
  err = ErrorOf([&] { Executor::SimpleBind(net, Context::CPU(), {{"datum", {4, 5}}}); });
  CHECK(Contains(err, "'datum' is not an argument"));
  err = ErrorOf([&] { Executor::SimpleBind(net, Context::CPU(), {{"w1", {5, 5}}}); });
  MESSAGE(err);
  CHECK(Contains(err, "cannot infer the shape of 'data'"));

  auto exe = Executor::SimpleBind(net, Context::CPU(), NetShapes(1, 4, 5));
  err = ErrorOf([&] { exe->Backward({}); });
  CHECK(Contains(err, "forward with is_train = true first"));
  exe->Forward(true);
  exe->Backward({});
  err = ErrorOf([&] { exe->Backward({}); });  // a second backward would read reused memory
  CHECK(Contains(err, "needs a forward of its own"));
  exe->Forward(false);
  err = ErrorOf([&] { exe->Backward({}); });
  CHECK(Contains(err, "forward with is_train = true first"));
  exe->Forward(true);
  err = ErrorOf([&] {
    exe->Backward({test::Array({4, 5}, std::vector<double>(20, 1)),
                   test::Array({4, 5}, std::vector<double>(20, 1))});
  });
  CHECK(Contains(err, "2 head gradients for 1 outputs"));
  err = ErrorOf([&] { exe->Backward({test::Array({5, 4}, std::vector<double>(20, 1))}); });
  CHECK(Contains(err, "head gradient of output 'out_output' has shape (5,4)"));

  err = ErrorOf([&] { exe->Reshape({{"data", {4, 6}}}); });
  MESSAGE(err);
  CHECK(Contains(err, "reshape: "));
  CHECK(Contains(err, "'data'"));
  err = ErrorOf([&] { exe->Reshape({{"labels", {4}}}); });
  CHECK(Contains(err, "'labels' is not an argument"));

  // Bind: counts and shapes of the given arrays.
  err = ErrorOf([&] { Executor::Bind(net, Context::CPU(), {exe->arg_arrays()[0]}, {}, {}, {}); });
  CHECK(Contains(err, "1 argument arrays given, the symbol has 3 (data, w1, b1)"));
  err = ErrorOf([&] {
    std::vector<NDArray> args = exe->arg_arrays();
    args[2] = NDArray({7}, Context::CPU());
    Executor::Bind(net, Context::CPU(), args, {}, {}, {});
  });
  MESSAGE(err);
  CHECK(Contains(err, "b1"));
  err = ErrorOf([&] {
    std::vector<NDArray> grads = exe->grad_arrays();
    grads[1] = NDArray({5, 4}, Context::CPU());
    Executor::Bind(net, Context::CPU(), exe->arg_arrays(), grads, {}, {});
  });
  CHECK(Contains(err, "the gradient array of 'w1' has shape (5,4)"));
}

TEST_CASE("arg_dict, grad_dict, aux_dict and copy_params_from") {
  auto exe =
      Executor::SimpleBind(Net(1), Context::CPU(), NetShapes(1, 2, 3), {}, {{"data", kNullOp}});
  const auto args = exe->ArgDict();
  CHECK(args.size() == 3);
  CHECK(args.at("w1").SameChunk(exe->arg_arrays()[1]));
  CHECK(exe->GradDict().size() == 2);  // data has none
  CHECK(exe->AuxDict().empty());

  exe->CopyParamsFrom({{"w1", test::Array({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}, DType::kFloat64)},
                       {"extra", test::Array({1}, {0})}},
                      {}, true);
  CHECK(CheckClose(exe->arg_arrays()[1], {1, 2, 3, 4, 5, 6, 7, 8, 9}));
  std::string err = ErrorOf([&] { exe->CopyParamsFrom({{"extra", test::Array({1}, {0})}}); });
  CHECK(Contains(err, "'extra' is not an argument"));
  err = ErrorOf([&] { exe->CopyParamsFrom({{"b1", test::Array({2}, {0, 0})}}); });
  CHECK(Contains(err, "'b1' has shape (2,), the executor's (3,)"));
}

TEST_CASE("bulking chains of nodes into one push gives the same results") {
  const Symbol net = Net(3);
  std::vector<std::vector<double>> results[2];
  for (int bulk : {1, 4}) {
    auto exe = Executor::SimpleBind(net, Context::CPU(), NetShapes(3, 5, 6), AllFloat64(net));
    auto& ge = dynamic_cast<GraphExecutor&>(*exe);
    ge.set_bulk_size(bulk);
    Randomize(exe->arg_arrays(), 11);
    exe->Forward(true);
    exe->Backward({RandomArray({5, 6}, -1, 1, DType::kFloat64, 12)});
    auto& r = results[bulk == 1 ? 0 : 1];
    r.push_back(exe->outputs()[0].ToVector());
    for (const NDArray& g : exe->grad_arrays()) r.push_back(g.ToVector());
  }
  REQUIRE(results[0].size() == results[1].size());
  for (size_t i = 0; i < results[0].size(); ++i) CHECK(results[0][i] == results[1][i]);
  CHECK(ErrorOf([] {
          auto exe = Executor::SimpleBind(Net(1), Context::CPU(), NetShapes(1, 2, 3));
          dynamic_cast<GraphExecutor&>(*exe).set_bulk_size(0);
        }).find("bulk size must be at least 1") != std::string::npos);
}

TEST_CASE("several outputs: an output also read inside the graph, and a variable output") {
  // outputs: relu1 (also log_softmax's input), out, and the variable `extra`.
  const Symbol hidden = Layer(Var("data"), 1);
  const Symbol out = Apply("log_softmax", {hidden}, {}, "out");
  const Symbol sym = graph::Group({hidden, out, Var("extra")});
  auto shapes = NetShapes(1, 3, 4);
  shapes["extra"] = {2};
  std::map<std::string, DType> types = AllFloat64(sym);
  auto exe = Executor::SimpleBind(sym, Context::CPU(), shapes, types, {{"extra", kNullOp}});
  REQUIRE(exe->outputs().size() == 3);
  Randomize(exe->arg_arrays(), 40);
  CHECK(exe->outputs()[2].SameChunk(exe->arg_arrays()[3]));  // the variable itself
  const std::vector<NDArray> heads{RandomArray({3, 4}, -1, 1, DType::kFloat64, 41),
                                   RandomArray({3, 4}, -1, 1, DType::kFloat64, 42),
                                   RandomArray({2}, -1, 1, DType::kFloat64, 43)};
  exe->Forward(true);
  exe->Backward(heads);
  std::vector<std::vector<double>> grads;
  for (size_t a = 0; a < 3; ++a) grads.push_back(exe->grad_arrays()[a].ToVector());
  CHECK(exe->grad_arrays()[3].is_none());
  for (size_t a = 0; a < 3; ++a) {
    CAPTURE(sym.ListArguments()[a]);
    CHECK(CheckClose(grads[a], NumericGrad(*exe, a, heads), 1e-4, 1e-6));
  }
}
