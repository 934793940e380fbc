// Arrays the executor keeps in oneDNN's blocked layout between ops
// (executor_layout.cc): small networks (convolution, BatchNorm, relu, sums,
// max, average and sum pooling, a global pooling read by Flatten) bound
// with the layout on and off give the same outputs, gradients, moving
// statistics and monitor values, also with the GEMM convolution forced
// (row-major copies of blocked arrays); only planned 4-D float32 arrays
// whose channels are a multiple of 16 are blocked, never the arrays the
// caller holds.
#include <doctest/doctest.h>

#include <map>

#include "engine/graph/graph_executor.h"
#include "ops/nn/convolution-inl.h"
#include "ops/tensor/dnnl_lazy.h"
#include "tests/cpp/op_test_util.h"

using namespace tessera;
using graph::Executor;
using graph::GraphExecutor;
using graph::Symbol;
using test::CheckClose;
using test::RandomArray;

namespace {

Symbol Var(const std::string& name) {
  return Symbol::Variable(name);
}
Symbol Apply(const char* op, const std::vector<Symbol>& args, op::ParamDict params,
             std::string name) {
  return Symbol::Create(op::Op::Get(op), std::move(params), args, {}, std::move(name));
}

Symbol Conv(const Symbol& x, const std::string& name, int filters, const char* kernel,
            const char* pad) {
  return Apply("Convolution", {x, Var(name + "_weight")},
               {{"num_filter", std::to_string(filters)},
                {"kernel", kernel},
                {"pad", pad},
                {"no_bias", "True"}},
               name);
}

Symbol Bn(const Symbol& x, const std::string& name) {
  return Apply("BatchNorm",
               {x, Var(name + "_gamma"), Var(name + "_beta"), Var(name + "_moving_mean"),
                Var(name + "_moving_var")},
               {{"fix_gamma", "False"}}, name);
}

Symbol Relu(const Symbol& x, const std::string& name) {
  return Apply("Activation", {x}, {{"act_type", "relu"}}, name);
}

// data (16 channels) -> conv 32 -> bn -> relu = r1 -> conv 32 -> bn, + r1,
// relu -> conv 16 (1x1): r1 and the sum are read by a convolution, a
// BatchNorm or the sum; the output is the caller's.
Symbol ResidualNet() {
  Symbol r1 = Relu(Bn(Conv(Var("data"), "c1", 32, "(3,3)", "(1,1)"), "bn1"), "r1");
  Symbol b2 = Bn(Conv(r1, "c2", 32, "(3,3)", "(1,1)"), "bn2");
  Symbol sum = Apply("elemwise_add", {b2, r1}, {}, "sum");
  return Conv(Relu(sum, "r2"), "c3", 16, "(1,1)", "(0,0)");
}

Symbol Pool(const Symbol& x, const std::string& name, op::ParamDict p) {
  return Apply("Pooling", {x}, std::move(p), name);
}

// data -> conv 32 -> bn -> relu -> max pool 3x3/2 pad 1 = p1 -> conv 32 -> bn,
// + p1, relu -> sum pool 2x2 stride 1 -> max pool 2x2/2 -> global average
// pool -> Flatten -> FullyConnected 10. oneDNN serves the max and average
// pools; the sum pool runs the loops on row-major copies.
Symbol PoolingNet() {
  Symbol r1 = Relu(Bn(Conv(Var("data"), "c1", 32, "(3,3)", "(1,1)"), "bn1"), "r1");
  Symbol p1 = Pool(r1, "p1", {{"kernel", "(3,3)"}, {"stride", "(2,2)"}, {"pad", "(1,1)"}});
  Symbol b2 = Bn(Conv(p1, "c2", 32, "(3,3)", "(1,1)"), "bn2");
  Symbol r2 = Relu(Apply("elemwise_add", {b2, p1}, {}, "sum"), "r2");
  Symbol p2 = Pool(r2, "p2", {{"kernel", "(2,2)"}, {"pool_type", "sum"}});
  Symbol p3 = Pool(p2, "p3", {{"kernel", "(2,2)"}, {"stride", "(2,2)"}});
  Symbol g = Pool(p3, "gp", {{"kernel", "(1,1)"}, {"global_pool", "True"}, {"pool_type", "avg"}});
  return Apply("FullyConnected",
               {Apply("Flatten", {g}, {}, "flat"), Var("fc_weight"), Var("fc_bias")},
               {{"num_hidden", "10"}}, "fc");
}

struct Run {
  std::vector<std::vector<double>> values;  // output, gradients, aux states
  std::map<std::string, std::vector<double>> monitored;
  size_t blocked = 0;
  std::string debug;
};

Run TrainStep(bool blocked, bool monitor, const Symbol& net = ResidualNet(),
              const Shape& data = {4, 16, 10, 10}) {
  const bool old = graph::SetBlockedLayout(blocked);
  auto exe = Executor::SimpleBind(net, Context::CPU(), {{"data", data}});
  graph::SetBlockedLayout(old);
  auto& ge = dynamic_cast<GraphExecutor&>(*exe);
  uint64_t seed = 5;
  for (const NDArray& a : exe->arg_arrays())
    CopyFromTo(RandomArray(a.shape(), -1, 1, DType::kFloat32, seed++), a);
  Run r;
  if (monitor)
    exe->SetMonitorCallback(
        [&r](const std::string& name, const NDArray& a) { r.monitored[name] = a.ToVector(); },
        false);
  exe->Forward(true);
  exe->Backward({RandomArray(exe->outputs()[0].shape(), -1, 1, DType::kFloat32, 99)});
  r.values.push_back(exe->outputs()[0].ToVector());
  for (const NDArray& g : exe->grad_arrays()) r.values.push_back(g.ToVector());
  for (const NDArray& a : exe->aux_arrays()) r.values.push_back(a.ToVector());
  r.blocked = ge.num_blocked_entries();
  r.debug = ge.DebugStr();
  // Nothing the caller holds is blocked.
  const auto& layouts = ge.entry_layouts();
  const auto& g = ge.graph();
  for (uint32_t nid : g.input_nodes()) CHECK(layouts[g.entry_id(nid, 0)] == MemLayout::kRowMajor);
  for (const auto& out : g.outputs()) CHECK(layouts[g.entry_id(out)] == MemLayout::kRowMajor);
  return r;
}

}  // namespace

TEST_CASE("blocked arrays between convolutions, BatchNorm, relu and sums change no value") {
  if (!op::nn_dnnl::Available()) return;  // no oneDNN: nothing is ever blocked
  const Run plain = TrainStep(false, false), blocked = TrainStep(true, false);
  CHECK(plain.blocked == 0);
  // c1, bn1, r1, c2, bn2 and sum forward; their gradients backward.
  CHECK(blocked.blocked >= 10);
  CHECK(blocked.debug.find("nChw16c") != std::string::npos);
  CHECK(blocked.debug.find("in oneDNN's blocked layout") != std::string::npos);
  REQUIRE(plain.values.size() == blocked.values.size());
  for (size_t i = 0; i < plain.values.size(); ++i) {
    CAPTURE(i);
    CHECK(CheckClose(blocked.values[i], plain.values[i], 1e-4, 1e-5));
  }
}

TEST_CASE("a monitor sees row-major values of blocked arrays") {
  if (!op::nn_dnnl::Available()) return;
  const Run plain = TrainStep(false, true), blocked = TrainStep(true, true);
  REQUIRE(blocked.blocked > 0);
  REQUIRE(plain.monitored.size() == blocked.monitored.size());
  CHECK(blocked.monitored.count("r1_output") == 1);
  for (const auto& [name, v] : plain.monitored) {
    CAPTURE(name);
    CHECK(CheckClose(blocked.monitored.at(name), v, 1e-4, 1e-5));
  }
}

TEST_CASE("blocked arrays through max, average and sum pooling, and a global pooling") {
  if (!op::nn_dnnl::Available()) return;
  const Run plain = TrainStep(false, false, PoolingNet(), {2, 16, 12, 12});
  const Run blocked = TrainStep(true, false, PoolingNet(), {2, 16, 12, 12});
  // The pools' inputs and outputs, forward and backward, are blocked; the
  // global pool's (2, 32, 1, 1) output, the same bytes either way, is not.
  CHECK(blocked.blocked >= 16);
  const size_t at = blocked.debug.find("(2,32,1,1) float32 [");
  REQUIRE(at != std::string::npos);
  CHECK(blocked.debug.substr(at, blocked.debug.find(']', at) - at).find("nChw16c") ==
        std::string::npos);
  REQUIRE(plain.values.size() == blocked.values.size());
  for (size_t i = 0; i < plain.values.size(); ++i) {
    CAPTURE(i);
    CHECK(CheckClose(blocked.values[i], plain.values[i], 1e-4, 1e-5));
  }
}

TEST_CASE("the GEMM convolution forced after bind copies blocked arrays row-major") {
  if (!op::nn_dnnl::Available()) return;
  const Run plain = TrainStep(false, false);
  const op::ConvAlgo old = op::SetConvAlgo(op::ConvAlgo::kGemm);
  const Run gemm = TrainStep(true, false);
  op::SetConvAlgo(op::ConvAlgo::kReference);
  const Run reference = TrainStep(true, false);  // bound without blocked arrays
  op::SetConvAlgo(old);
  CHECK(gemm.blocked >= 10);
  CHECK(reference.blocked == 0);
  for (size_t i = 0; i < plain.values.size(); ++i) {
    CAPTURE(i);
    CHECK(CheckClose(gemm.values[i], plain.values[i], 1e-4, 1e-5));
    CHECK(CheckClose(reference.values[i], plain.values[i], 1e-4, 1e-5));
  }
}
