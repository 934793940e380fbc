// Symbols: composition, names, lists, attributes; whole-graph shape and
// dtype inference; the gradient pass (checked by evaluating its nodes).
#include <doctest/doctest.h>

#include "engine/graph/gradient.h"
#include "engine/graph/indexed_graph.h"
#include "engine/graph/infer.h"
#include "engine/graph/symbol.h"
#include "engine/op/op_attr_types.h"
#include "op_test_util.h"

using namespace tessera;
using namespace tessera::graph;
using tessera::test::Array;
using tessera::test::CheckClose;

namespace {

Symbol Op(const char* name, std::vector<Symbol> args, ParamDict params = {}, std::string node = "",
          std::map<std::string, Symbol> kwargs = {}) {
  return Symbol::Create(op::Op::Get(name), std::move(params), args, kwargs, std::move(node));
}

std::vector<Shape> Infer(const Symbol& s, const std::map<std::string, Shape>& given,
                         size_t* unknown) {
  IndexedGraph g(s.outputs);
  std::vector<Shape> shapes(g.num_entries());
  for (uint32_t nid : g.input_nodes()) {
    auto it = given.find(g[nid].node->attrs.name);
    if (it != given.end()) shapes[g.entry_id(nid, 0)] = it->second;
  }
  *unknown = InferShapes(g, &shapes);
  return shapes;
}

Shape ShapeOf(const Symbol& s, const std::vector<Shape>& shapes, const std::string& var) {
  IndexedGraph g(s.outputs);
  for (uint32_t nid : g.input_nodes())
    if (g[nid].node->attrs.name == var) return shapes[g.entry_id(nid, 0)];
  return Shape();
}

}  // namespace

TEST_CASE("automatic names, missing inputs become variables") {
  ResetNames();
  Symbol data = Symbol::Variable("data");
  Symbol q = Op("quadratic", {}, {{"a", "1"}});
  CHECK(q.ListArguments() == std::vector<std::string>{"quadratic0_data"});
  Symbol q2 = Op("quadratic", {data});
  CHECK(q2.ListOutputs() == std::vector<std::string>{"quadratic1_output"});
  Symbol d = Op("dot", {data}, {}, "fc1");
  CHECK(d.ListArguments() == std::vector<std::string>{"data", "fc1_rhs"});
  CHECK_THROWS_WITH_AS(Op("dot", {}, {}, "x", {{"weight", data}}),
                       doctest::Contains("unknown input 'weight'"), Error);
  CHECK_THROWS_WITH_AS(Op("quadratic", {data}, {{"bogus", "1"}}), doctest::Contains("bogus"),
                       Error);
}

TEST_CASE("group, internals, children, outputs by name, compose") {
  Symbol a = Symbol::Variable("a"), b = Symbol::Variable("b");
  Symbol s = Op("elemwise_add", {a, b}, {}, "plus");
  Symbol r = Op("relu", {s}, {}, "act");
  Symbol g = Group({r, s});
  CHECK(g.ListOutputs() == std::vector<std::string>{"act_output", "plus_output"});
  CHECK(g.ListArguments() == std::vector<std::string>{"a", "b"});
  Symbol internals = r.GetInternals();
  CHECK(internals.ListOutputs() == std::vector<std::string>{"a", "b", "plus_output", "act_output"});
  CHECK(internals.Output("plus_output").outputs[0].node == s.outputs[0].node);
  CHECK(r.GetChildren().ListOutputs() == std::vector<std::string>{"plus_output"});
  CHECK(a.GetChildren().NumOutputs() == 0);
  Symbol split = Op("split", {a}, {{"num_outputs", "3"}}, "sp");
  CHECK(split.ListOutputs() == std::vector<std::string>{"sp_output0", "sp_output1", "sp_output2"});
  CHECK_THROWS_AS(split[3], Error);

  Symbol c = Symbol::Variable("c");
  Symbol composed = r.Compose({{"b", Op("exp", {c}, {}, "e")}});
  CHECK(composed.ListArguments() == std::vector<std::string>{"a", "c"});
  CHECK(r.ListArguments() == std::vector<std::string>{"a", "b"});  // unchanged
  CHECK_THROWS_WITH_AS(r.Compose({{"zz", c}}), doctest::Contains("arguments: a, b"), Error);
}

TEST_CASE("attributes") {
  Symbol v = Symbol::Variable("w", {{"__shape__", "(2,3)"}, {"lr_mult", "2"}});
  CHECK(v.GetAttr("lr_mult") == "2");
  CHECK(!v.GetAttr("nothing"));
  Symbol q = Op("quadratic", {v}, {{"a", "1"}}, "q");
  q.SetAttrs({{"__ctx_group__", "dev1"}});
  CHECK(q.ListAttr().at("__ctx_group__") == "dev1");
  CHECK_THROWS_AS(q.SetAttrs({{"a", "not a number"}}), Error);
  CHECK(q.ListAttr().at("a") == "1");  // restored
  auto dict = q.AttrDict();
  CHECK(dict.at("w").at("lr_mult") == "2");
  CHECK(dict.at("q").at("a") == "1");
}

TEST_CASE("mutual shape inference: unknown dimensions flow both ways") {
  Symbol a = Symbol::Variable("a"), b = Symbol::Variable("b"), c = Symbol::Variable("c");
  Symbol s = Op("elemwise_add", {Op("elemwise_mul", {a, b}), Op("elemwise_mul", {b, c})});
  size_t unknown = 0;
  auto shapes = Infer(s, {{"a", Shape{2, 0}}, {"c", Shape{0, 3}}}, &unknown);
  CHECK(unknown == 0);
  CHECK(ShapeOf(s, shapes, "a") == Shape{2, 3});
  CHECK(ShapeOf(s, shapes, "b") == Shape{2, 3});
  CHECK(ShapeOf(s, shapes, "c") == Shape{2, 3});

  auto partial = Infer(s, {{"a", Shape{2, 0}}}, &unknown);
  CHECK(unknown > 0);
  CHECK(ShapeOf(s, partial, "b") == Shape{2, 0});

  CHECK_THROWS_WITH_AS(Infer(s, {{"a", Shape{2, 3}}, {"c", Shape{2, 4}}}, &unknown),
                       doctest::Contains("(2,4)"), Error);
}

TEST_CASE("shape inference seeds from __shape__ and names the input on conflict") {
  Symbol x = Symbol::Variable("x", {{"__shape__", "(4,5)"}});
  Symbol w = Symbol::Variable("w");
  Symbol d = Op("dot", {x, w}, {}, "fc");
  size_t unknown = 0;
  auto shapes = Infer(d, {{"w", Shape{5, 7}}}, &unknown);
  CHECK(unknown == 0);
  IndexedGraph g(d.outputs);
  CHECK(shapes[g.entry_id(d.outputs[0])] == Shape{4, 7});
  try {
    Infer(d, {{"w", Shape{6, 7}}}, &unknown);
    FAIL("expected an error");
  } catch (const Error& e) {
    const std::string msg = e.what();
    CHECK(msg.find("fc") != std::string::npos);
    CHECK(msg.find("(6,7)") != std::string::npos);
    CHECK(msg.find("(4,5)") != std::string::npos);
  }
}

TEST_CASE("dtype inference") {
  Symbol a = Symbol::Variable("a", {{"__dtype__", "1"}});  // MXNet's flag for float64
  Symbol b = Symbol::Variable("b");
  Symbol s = Op("elemwise_add", {a, b});
  IndexedGraph g(s.outputs);
  std::vector<DType> types(g.num_entries(), DType::kUnknown);
  CHECK(InferTypes(g, &types) == 0);
  CHECK(types[g.entry_id(s.outputs[0])] == DType::kFloat64);
}

TEST_CASE("gradient: a shared input gets the sum, values match hand derivatives") {
  // y = relu(x * w) + x  ->  dy/dx = (x*w > 0) * w + 1, dy/dw = (x*w > 0) * x
  Symbol x = Symbol::Variable("x"), w = Symbol::Variable("w");
  Symbol y = Op("elemwise_add", {Op("relu", {Op("elemwise_mul", {x, w})}), x});
  Symbol head = Symbol::Variable("head");
  auto grads = Gradient(y.outputs, head.outputs, {x.outputs[0], w.outputs[0]});
  REQUIRE(grads.size() == 2);
  CHECK(grads[0].node->op()->name() == "add_n");

  NDArray xv = Array({4}, {1, -2, 3, 0.5}), wv = Array({4}, {2, 1, -1, 4}),
          hv = Array({4}, {1, 1, 1, 1});
  auto vals = test::EvalEntries(
      grads, {{x.outputs[0].node, xv}, {w.outputs[0].node, wv}, {head.outputs[0].node, hv}});
  CHECK(CheckClose(vals[0], {2 + 1, 0 + 1, 0 + 1, 4 + 1}));
  CHECK(CheckClose(vals[1], {1, 0, 0, 0.5}));
}

TEST_CASE("gradient: unrelated inputs get zeros, ops without a rule are named") {
  Symbol x = Symbol::Variable("x"), z = Symbol::Variable("z");
  Symbol y = Op("exp", {x});
  auto grads = Gradient(y.outputs, Symbol::Variable("h").outputs, {z.outputs[0]});
  CHECK(grads[0].node->op()->name() == "zeros_like");
  Symbol s = Op("sign", {x}, {}, "sg");
  if (!op::Op::GetAttr<op::FGradient>("FGradient").contains(op::Op::Get("sign")))
    CHECK_THROWS_WITH_AS(Gradient(s.outputs, Symbol::Variable("h").outputs, {x.outputs[0]}),
                         doctest::Contains("sg"), Error);
}

TEST_CASE("add_n sums, in place and with req add") {
  NDArray a = Array({3}, {1, 2, 3}), b = Array({3}, {10, 20, 30}), c = Array({3}, {100, 200, 300});
  CHECK(CheckClose(test::Run("add_n", {a, b, c}, {{"num_args", "3"}}), {111, 222, 333}));
  CHECK(CheckClose(test::Run("add_n", {a}, {{"num_args", "1"}}), {1, 2, 3}));
  std::vector<NDArray> out{a};
  Invoke(MakeAttrs("add_n", {{"num_args", "2"}}), {a, b}, &out);
  CHECK(CheckClose(a, {11, 22, 33}));
  std::vector<NDArray> acc{c};
  InvokeOptions add;
  add.req = {kAddTo};
  Invoke(MakeAttrs("add_n", {{"num_args", "2"}}), {b, b}, &acc, add);
  CHECK(CheckClose(c, {120, 240, 360}));
  CHECK(test::CheckNumericGradient(
      "add_n", {{"num_args", "3"}},
      {test::RandomArray({2, 3}, -1, 1), test::RandomArray({2, 3}, -1, 1, DType::kFloat64, 2),
       test::RandomArray({2, 3}, -1, 1, DType::kFloat64, 3)}));
}
