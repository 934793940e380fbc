// Deep structures: graphs hundreds of thousands to a million nodes deep are
// built, traversed, saved, bound, differentiated and freed without one stack
// frame per node. Freeing such a chain through the nodes' shared pointers
// used to recurse once per node and overflow the stack (engine/op/node.h).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/autograd/autograd.h"
#include "engine/graph/executor.h"
#include "engine/graph/indexed_graph.h"
#include "engine/graph/json.h"
#include "engine/ndarray/imperative.h"
#include "engine/op/node.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using graph::Symbol;
using op::Node;
using op::NodeEntry;
using op::NodePtr;

namespace {

// x -> n1 -> n2 -> ... -> n<depth>, each node the only owner of its input.
NodePtr RawChain(int depth) {
  NodePtr head = Node::Variable("x");
  for (int i = 0; i < depth; ++i) {
    NodePtr n = Node::Create();
    n->inputs.push_back({std::move(head), 0, 0});
    head = std::move(n);
  }
  return head;
}

}  // namespace

TEST_CASE("a chain of a million nodes is traversed and freed iteratively") {
  NodePtr head = RawChain(1000000);
  size_t visited = 0;
  graph::DFSVisit({{head, 0, 0}}, [&](const NodePtr&) { ++visited; });
  CHECK(visited == 1000001);
  head.reset();  // a stack overflow before the destructor became iterative
}

TEST_CASE("control dependencies, shared inputs and wide fans are freed too") {
  // A backward node points at its forward node through control_deps.
  NodePtr head = Node::Variable("x");
  for (int i = 0; i < 300000; ++i) {
    NodePtr n = Node::Create();
    n->control_deps.push_back(std::move(head));
    head = std::move(n);
  }
  head.reset();
  // Two chains sharing their lower half: the shared node is freed once,
  // when its last owner goes.
  NodePtr base = RawChain(200000);
  NodePtr a = Node::Create(), b = Node::Create();
  a->inputs.push_back({base, 0, 0});
  b->inputs.push_back({base, 0, 0});
  base.reset();
  a.reset();
  CHECK(b->inputs[0].node.use_count() == 1);
  b.reset();
  // One node over many chains.
  NodePtr fan = Node::Create();
  for (int i = 0; i < 100; ++i) fan->inputs.push_back({RawChain(3000), 0, 0});
  fan.reset();
}

TEST_CASE("a symbol 200,000 ops deep: lists, JSON, binding, forward") {
  constexpr int kDepth = 200000;
  Symbol s = Symbol::Variable("x");
  const op::Op* relu = op::Op::Get("relu");
  for (int i = 0; i < kDepth; ++i) s = Symbol::Create(relu, {}, {s}, {}, "r" + std::to_string(i));
  CHECK(s.ListArguments() == std::vector<std::string>{"x"});
  const std::string json = graph::SaveJSON(s);
  Symbol loaded = graph::LoadJSON(json, "deep");
  CHECK(graph::SaveJSON(loaded) == json);
  loaded = Symbol();
  auto exe = graph::Executor::SimpleBind(s, Context::CPU(), {{"x", Shape{2}}}, {}, {}, kNullOp);
  exe->Forward(false);
  exe->outputs()[0].WaitToRead();
  exe.reset();
  s = Symbol();  // the last owner of the chain
}

TEST_CASE("300,000 recorded autograd ops: backward, then the tape is freed") {
  NDArray x = Invoke("_ones", {}, {{"shape", "(2,)"}})[0];
  NDArray grad = autograd::AttachGrad(&x);
  const bool was = autograd::SetRecording(true);
  NDArray y = x;
  const auto attrs = MakeAttrs("_mul_scalar", {{"scalar", "1"}});
  for (int i = 0; i < 300000; ++i) {
    std::vector<NDArray> out;
    Invoke(attrs, {y}, &out);
    y = out[0];
  }
  autograd::SetRecording(was);
  autograd::Backward({y});
  CHECK(grad.ToVector() == std::vector<double>{1, 1});
  y = NDArray();  // frees the recorded chain
  x = NDArray();
}
