// The class-style Operator / OperatorProperty interface and its adapter into
// the registry: SwapAxis (the real op written with it) and a test-only
// property with two arguments, an auxiliary state, a hidden output, resources,
// in-place options and a partial backward dependency.
#include <doctest/doctest.h>

#include "engine/legacy_op/operator_property.h"
#include "engine/ndarray/imperative.h"
#include "engine/op/infer_utils.h"
#include "ops/tensor/swapaxis_op-inl.h"
#include "tests/cpp/op_test_util.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using namespace tessera::op;
using tessera::test::Array;
using tessera::test::CheckClose;
using tessera::test::CheckNumericGradient;
using tessera::test::Contains;
using tessera::test::ErrorOf;
using tessera::test::Iota;
using tessera::test::RandomArray;
using tessera::test::Run;

namespace {

// ---- A test property: out = data * weight, plus a hidden output `saved` (a
// copy of data) that the backward reads instead of data, and an aux state
// `count` that every forward increments.

double At(const TBlob& b, int64_t i) {
  return SwitchFloatDType(b.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return static_cast<double>(b.dptr<T>()[i]);
  });
}
template <typename F>
void Write(const TBlob& out, OpReqType req, F value) {
  SwitchFloatDType(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchReq(req, [&](auto r) {
      for (int64_t i = 0; i < out.Size(); ++i) AssignReq<r.value>(out.dptr<T>()[i], value(i));
    });
  });
}

class ScaleOp : public Operator {
 public:
  void Forward(const OpContext& ctx, const std::vector<TBlob>& in,
               const std::vector<OpReqType>& req, const std::vector<TBlob>& out,
               const std::vector<TBlob>& aux) override {
    TS_CHECK(ctx.requested.size() == 1 && ctx.requested[0].type() == ResourceRequest::kTempSpace)
        << "forward resources missing";
    TS_CHECK(in.size() == 2 && out.size() == 2 && aux.size() == 1) << "forward arity";
    Write(out[0], req[0], [&](int64_t i) { return At(in[0], i) * At(in[1], i); });
    Write(out[1], req[1], [&](int64_t i) { return At(in[0], i); });
    Write(aux[0], kAddTo, [](int64_t) { return 1.0; });
  }
  void Backward(const OpContext& ctx, const std::vector<TBlob>& out_grad,
                const std::vector<TBlob>& in_data, const std::vector<TBlob>& out_data,
                const std::vector<OpReqType>& req, const std::vector<TBlob>& in_grad,
                const std::vector<TBlob>& aux) override {
    TS_CHECK(ctx.requested.size() == 1 && ctx.requested[0].type() == ResourceRequest::kRandom)
        << "backward resources missing";
    // Only what DeclareBackwardDependency listed is there.
    TS_CHECK(in_data[0].dptr_ == nullptr && in_data[1].dptr_ && out_data[0].dptr_ == nullptr &&
             out_data[1].dptr_ && aux.size() == 1)
        << "backward got the wrong arrays";
    // Both gradients of element i before either is written: out_grad may be in_grad[0].
    std::vector<double> gd, gw;
    for (int64_t i = 0; i < out_grad[0].Size(); ++i) {
      gd.push_back(At(out_grad[0], i) * At(in_data[1], i));
      gw.push_back(At(out_grad[0], i) * At(out_data[1], i));
    }
    Write(in_grad[0], req[0], [&](int64_t i) { return gd[i]; });
    Write(in_grad[1], req[1], [&](int64_t i) { return gw[i]; });
  }
};

class ScaleProp : public OperatorProperty {
 public:
  void Init(const std::vector<std::pair<std::string, std::string>>& kwargs) override {
    for (const auto& [k, v] : kwargs) TS_THROW << "_TestScale: unknown parameter '" << k << "'";
  }
  std::map<std::string, std::string> GetParams() const override { return {}; }
  std::vector<std::string> ListArguments() const override { return {"data", "weight"}; }
  std::vector<std::string> ListOutputs() const override { return {"out", "saved"}; }
  std::vector<std::string> ListAuxiliaryStates() const override { return {"count"}; }
  int NumVisibleOutputs() const override { return 1; }
  bool InferShape(std::vector<Shape>* in, std::vector<Shape>* out,
                  std::vector<Shape>* aux) const override {
    Shape s;
    for (const Shape& x : {(*in)[0], (*in)[1], (*out)[0], (*out)[1]})
      TS_CHECK(MergeShape(&s, x)) << "_TestScale: data, weight and outputs need one shape";
    (*in)[0] = (*in)[1] = (*out)[0] = (*out)[1] = s;
    (*aux)[0] = Shape{1};
    return s.known();
  }
  OperatorProperty* Copy() const override { return new ScaleProp(*this); }
  Operator* CreateOperator(Context ctx) const override {
    TS_CHECK(ctx.is_cpu()) << "_TestScale: CPU only";
    return new ScaleOp();
  }
  std::string TypeString() const override { return "_TestScale"; }
  std::vector<ResourceRequest> ForwardResource(const std::vector<Shape>&) const override {
    return {ResourceRequest::kTempSpace};
  }
  std::vector<ResourceRequest> BackwardResource(const std::vector<Shape>&) const override {
    return {ResourceRequest::kRandom};
  }
  std::vector<int> DeclareBackwardDependency(const std::vector<int>& out_grad,
                                             const std::vector<int>& in_data,
                                             const std::vector<int>& out_data) const override {
    return {out_grad[0], in_data[1], out_data[1]};
  }
  std::vector<std::pair<int, void*>> ForwardInplaceOption(
      const std::vector<int>& in_data, const std::vector<void*>& out_data) const override {
    return {{in_data[0], out_data[0]}};
  }
  std::vector<std::pair<int, void*>> BackwardInplaceOption(
      const std::vector<int>& out_grad, const std::vector<int>&, const std::vector<int>&,
      const std::vector<void*>& in_grad) const override {
    return {{out_grad[0], in_grad[0]}};
  }
};

std::vector<std::pair<int, int>> Inplace(std::string_view op, ParamDict params = {}) {
  auto attrs = MakeAttrs(op, std::move(params));
  return Op::GetAttr<FInplaceOption>("FInplaceOption")[attrs->op](*attrs);
}

}  // namespace

TS_REGISTER_OP_PROPERTY(_TestScale, ScaleProp)
    .describe("data * weight, counting calls in an aux state (test).")
    .add_argument("data", "NDArray", "Data.")
    .add_argument("weight", "NDArray", "Weight.");

TEST_CASE("SwapAxis interchanges two axes") {
  // (2, 3) -> (3, 2): a transpose.
  NDArray m = Run("SwapAxis", {Array({2, 3}, Iota(6))}, {{"dim1", "0"}, {"dim2", "1"}});
  CHECK(m.shape() == Shape{3, 2});
  CheckClose(m, {0, 3, 1, 4, 2, 5});
  // (2, 3, 4) swapping 0 and 2: out[k][j][i] = x[i][j][k] = 12 i + 4 j + k.
  NDArray x = Array({2, 3, 4}, Iota(24));
  std::vector<double> expected;
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 2; ++i) expected.push_back(12 * i + 4 * j + k);
  NDArray y = Run("SwapAxis", {x}, {{"dim1", "0"}, {"dim2", "2"}});
  CHECK(y.shape() == Shape{4, 3, 2});
  CheckClose(y, expected);
  // Negative axes, the alias, the axes in either order.
  CheckClose(Run("swapaxes", {x}, {{"dim1", "-1"}, {"dim2", "0"}}), expected);
  // Middle axes of a 4-D array: (1, 2, 3, 2) swapping 1 and 2 -> (1, 3, 2, 2).
  NDArray z = Run("SwapAxis", {Array({1, 2, 3, 2}, Iota(12))}, {{"dim1", "1"}, {"dim2", "2"}});
  CHECK(z.shape() == Shape{1, 3, 2, 2});
  CheckClose(z, {0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11});
  // An axis with itself, and the defaults (0, 0): a copy.
  CheckClose(Run("SwapAxis", {x}, {{"dim1", "1"}, {"dim2", "1"}}), Iota(24));
  CheckClose(Run("SwapAxis", {x}), Iota(24));
}

TEST_CASE("SwapAxis works on every dtype") {
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                  DType::kUint8, DType::kInt8, DType::kInt32, DType::kInt64, DType::kBool}) {
    INFO(DTypeName(t));
    NDArray y = Run("SwapAxis", {Array({2, 2}, {1, 0, 1, 1}, t)}, {{"dim1", "0"}, {"dim2", "1"}});
    CHECK(y.dtype() == t);
    CheckClose(y, {1, 1, 0, 1});
  }
}

TEST_CASE("SwapAxis honours add, null, in place and views") {
  NDArray x = Array({2, 2}, {1, 2, 3, 4});
  NDArray out = Array({2, 2}, {10, 10, 10, 10});
  std::vector<NDArray> outs{out};
  InvokeOptions add;
  add.req = {kAddTo};
  Invoke(MakeAttrs("SwapAxis", {{"dim1", "0"}, {"dim2", "1"}}), {x}, &outs, add);
  CheckClose(out, {11, 13, 12, 14});
  InvokeOptions null;
  null.req = {kNullOp};
  Invoke(MakeAttrs("SwapAxis", {{"dim1", "0"}, {"dim2", "1"}}), {x}, &outs, null);
  CheckClose(out, {11, 13, 12, 14});
  // The input as the output: not in place (no option), the invoker goes through a temporary.
  CHECK(Inplace("SwapAxis").empty());
  std::vector<NDArray> self{x};
  Invoke(MakeAttrs("SwapAxis", {{"dim1", "0"}, {"dim2", "1"}}), {x}, &self);
  CheckClose(x, {1, 3, 2, 4});
  // Views: rows 1..2 of a (3, 2) matrix, and a reshape.
  NDArray base = Array({3, 2}, {0, 1, 2, 3, 4, 5});
  CheckClose(Run("SwapAxis", {base.Slice(1, 3)}, {{"dim1", "0"}, {"dim2", "1"}}), {2, 4, 3, 5});
  CheckClose(Run("SwapAxis", {base.Reshape(Shape{2, 3})}, {{"dim1", "1"}, {"dim2", "0"}}),
             {0, 3, 1, 4, 2, 5});
  std::vector<NDArray> into_view{base.Slice(0, 2)};
  Invoke(MakeAttrs("SwapAxis", {{"dim1", "0"}, {"dim2", "1"}}), {Array({2, 2}, {7, 8, 9, 6})},
         &into_view);
  CheckClose(base, {7, 9, 8, 6, 4, 5});
}

TEST_CASE("SwapAxis gradient: swap back, reading out_grad only") {
  CHECK(CheckNumericGradient("SwapAxis", {{"dim1", "0"}, {"dim2", "2"}},
                             {RandomArray({2, 3, 4}, -1, 1)}));
  CHECK(CheckNumericGradient("SwapAxis", {{"dim1", "-1"}, {"dim2", "1"}},
                             {RandomArray({3, 2, 2}, -1, 1)}));
  NodePtr n = Node::Create();
  n->attrs.dict = {{"dim1", "0"}, {"dim2", "1"}};
  Op::Get("SwapAxis")->ParseAttrs(&n->attrs);
  n->inputs.push_back({Node::Variable("x"), 0, 0});
  NodePtr og = Node::Variable("og");
  const auto grads = Op::GetAttr<FGradient>("FGradient")[n->op()](n, {{og, 0, 0}});
  REQUIRE(grads.size() == 1);
  CHECK(grads[0].node->op()->name() == "_backward_SwapAxis");
  REQUIRE(grads[0].node->inputs.size() == 1);
  CHECK(grads[0].node->inputs[0].node == og);
  CHECK(grads[0].node->control_deps.at(0) == n);
  // The backward on its own: in_grad's shape comes from out_grad through the property.
  NDArray g = Run("_backward_SwapAxis", {Array({3, 2}, {0, 3, 1, 4, 2, 5})},
                  {{"dim1", "0"}, {"dim2", "1"}});
  CHECK(g.shape() == Shape{2, 3});
  CheckClose(g, Iota(6));
}

TEST_CASE("SwapAxis shape inference is mutual, errors name the op") {
  auto attrs = MakeAttrs("SwapAxis", {{"dim1", "0"}, {"dim2", "2"}});
  const auto& finfer = Op::GetAttr<FInferShape>("FInferShape");
  std::vector<Shape> in{Shape()}, out{Shape{4, 3, 2}};
  CHECK(finfer[attrs->op](*attrs, &in, &out));
  CHECK(in[0] == Shape{2, 3, 4});
  std::vector<Shape> in2{Shape{0, 3, 4}}, out2{Shape{0, 3, 5}};
  CHECK(finfer[attrs->op](*attrs, &in2, &out2));
  CHECK(in2[0] == Shape{5, 3, 4});
  CHECK(out2[0] == Shape{4, 3, 5});
  std::vector<Shape> in3{Shape()}, out3{Shape()};
  CHECK(!finfer[attrs->op](*attrs, &in3, &out3));

  NDArray x = Array({2, 3}, Iota(6));
  CHECK(Contains(ErrorOf([&] {
                   Run("SwapAxis", {x}, {{"dim1", "2"}});
                 }),
                 "SwapAxis: dim1 = 2 is out of range for shape (2,3) (valid: -2 to 1)"));
  CHECK(Contains(ErrorOf([&] {
                   Run("SwapAxis", {x}, {{"dim2", "-3"}});
                 }),
                 "SwapAxis: dim2 = -3 is out of range for shape (2,3)"));
  CHECK(Contains(ErrorOf([&] {
                   Run("SwapAxis", {x}, {{"dim1", "x"}});
                 }),
                 "SwapAxis: parameter 'dim1' got 'x', expected int"));
  CHECK(Contains(ErrorOf([&] {
                   Run("SwapAxis", {x}, {{"axis", "1"}});
                 }),
                 "SwapAxis: unknown parameter 'axis' (parameters: dim1, dim2)"));
  CHECK(Contains(ErrorOf([&] { Run("SwapAxis", {x, x}); }), "SwapAxis: takes 1 input, got 2"));
  std::vector<NDArray> wrong{NDArray(Shape{2, 3}, Context::CPU())};
  CHECK(Contains(ErrorOf([&] {
                   Invoke(MakeAttrs("SwapAxis", {{"dim1", "0"}, {"dim2", "1"}}), {x}, &wrong);
                 }),
                 "SwapAxis: output shape (2,3) does not match input shape (2,3)"));
}

TEST_CASE("SwapAxis property: lists, params, copy") {
  auto attrs = MakeAttrs("SwapAxis", {{"dim1", "1"}, {"dim2", "-1"}});
  CHECK(Op::GetAttr<FListInputNames>("FListInputNames")[attrs->op](*attrs) ==
        std::vector<std::string>{"data"});
  CHECK(Op::GetAttr<FListOutputNames>("FListOutputNames")[attrs->op](*attrs) ==
        std::vector<std::string>{"output"});
  CHECK(Op::GetAttr<FNumVisibleOutputs>("FNumVisibleOutputs")[attrs->op](*attrs) == 1);
  CHECK(Op::GetAttr<FMutateInputs>("FMutateInputs")[attrs->op](*attrs).empty());
  CHECK(Op::GetAttr<FResourceRequest>("FResourceRequest")[attrs->op](*attrs).empty());
  CHECK(Op::Get("swapaxes") == Op::Get("SwapAxis"));
  CHECK(Op::Get("SwapAxis")->params().size() == 2);
  CHECK(Op::Get("SwapAxis")->params()[0].is_axis);
  // The property object itself: Init, GetParams, Copy, TypeString.
  SwapAxisProp p;
  p.Init({{"dim1", "1"}, {"dim2", "-1"}});
  CHECK(p.GetParams() == std::map<std::string, std::string>{{"dim1", "1"}, {"dim2", "-1"}});
  std::unique_ptr<OperatorProperty> c(p.Copy());
  CHECK(c->GetParams() == p.GetParams());
  CHECK(c->TypeString() == "SwapAxis");
  CHECK(c->ListAuxiliaryStates().empty());
  CHECK(c->NumOutputs() == 1);
  CHECK(Contains(ErrorOf([&] { p.Init({{"dim3", "0"}}); }), "SwapAxis: unknown parameter 'dim3'"));
}

TEST_CASE("a property with aux states, hidden outputs and partial backward dependencies") {
  const char* op = "_TestScale";
  auto attrs = MakeAttrs(op);
  CHECK(Op::GetAttr<FListInputNames>("FListInputNames")[attrs->op](*attrs) ==
        std::vector<std::string>{"data", "weight", "count"});
  CHECK(Op::GetAttr<FListOutputNames>("FListOutputNames")[attrs->op](*attrs) ==
        std::vector<std::string>{"out", "saved"});
  CHECK(Op::GetAttr<FNumVisibleOutputs>("FNumVisibleOutputs")[attrs->op](*attrs) == 1);
  CHECK(Op::GetAttr<FMutateInputs>("FMutateInputs")[attrs->op](*attrs) == std::vector<uint32_t>{2});
  CHECK(attrs->op->NumInputs(*attrs) == 3);
  CHECK(attrs->op->NumOutputs(*attrs) == 2);
  const auto& fres = Op::GetAttr<FResourceRequest>("FResourceRequest");
  REQUIRE(fres[attrs->op](*attrs).size() == 1);
  CHECK(fres[attrs->op](*attrs)[0].type == ResourceRequest::kTempSpace);
  auto battrs = MakeAttrs("_backward__TestScale");
  REQUIRE(fres[battrs->op](*battrs).size() == 1);
  CHECK(fres[battrs->op](*battrs)[0].type == ResourceRequest::kRandom);
  CHECK(battrs->op->NumInputs(*battrs) == 4);  // out_grad, weight, saved, count
  CHECK(battrs->op->NumOutputs(*battrs) == 2);
  CHECK(Inplace(op) == std::vector<std::pair<int, int>>{{0, 0}});
  CHECK(Inplace("_backward__TestScale") == std::vector<std::pair<int, int>>{{0, 0}});
  CHECK(Op::GetAttr<TIsBackward>("TIsBackward").get(battrs->op, false));

  // Forward: both outputs, and the aux state is written.
  NDArray d = Array({3}, {1, 2, 3}, DType::kFloat64);
  NDArray w = Array({3}, {4, 5, 6}, DType::kFloat64);
  NDArray count = Array({1}, {0}, DType::kFloat64);
  std::vector<NDArray> outs;
  Invoke(attrs, {d, w, count}, &outs);
  REQUIRE(outs.size() == 2);
  CheckClose(outs[0], {4, 10, 18});
  CheckClose(outs[1], {1, 2, 3});
  CheckClose(count, {1});
  Invoke(attrs, {d, w, count}, &outs);
  CheckClose(count, {2});

  // The backward node reads out_grad, weight and saved (not data, not out), then the aux state.
  NodePtr n = Node::Create();
  n->attrs = *attrs;
  n->attrs.name = "s";
  for (const char* v : {"data", "weight", "count"}) n->inputs.push_back({Node::Variable(v), 0, 0});
  NodePtr og = Node::Variable("og");
  const auto grads =
      Op::GetAttr<FGradient>("FGradient")[n->op()](n, {{og, 0, 0}, {Node::Variable("h"), 0, 0}});
  REQUIRE(grads.size() == 3);  // data, weight, and a zero for the aux state
  const NodePtr& b = grads[0].node;
  REQUIRE(b->inputs.size() == 4);
  CHECK(b->inputs[0].node == og);
  CHECK(b->inputs[1].node == n->inputs[1].node);
  CHECK((b->inputs[2].node == n && b->inputs[2].index == 1));
  CHECK(b->inputs[3].node == n->inputs[2].node);
  CHECK(grads[2].node->op()->name() == "zeros_like");

  // Gradients against finite differences (the aux state's is zero).
  CHECK(CheckNumericGradient(
      op, {},
      {RandomArray({2, 3}, -1, 1), RandomArray({2, 3}, -1, 1, DType::kFloat64, 2),
       Array({1}, {0}, DType::kFloat64)}));

  // The backward in place on out_grad -> in_grad[0], with add on in_grad[1].
  NDArray g = Array({3}, {1, 1, 2}, DType::kFloat64);
  NDArray gw = Array({3}, {10, 10, 10}, DType::kFloat64);
  std::vector<NDArray> bout{g, gw};
  InvokeOptions opt;
  opt.req = {kWriteTo, kAddTo};
  Invoke(battrs, {g, w, d, count}, &bout, opt);
  CheckClose(g, {4, 5, 12});
  CheckClose(gw, {11, 12, 16});

  // Shape errors come from the property, at the call.
  CHECK(Contains(ErrorOf([&] {
                   Run(op, {d, Array({2}, {1, 2}, DType::kFloat64), count});
                 }),
                 "_TestScale: data, weight and outputs need one shape"));
  CHECK(Contains(ErrorOf([&] {
                   Run(op, {d, w, Array({2}, {0, 0}, DType::kFloat64)});
                 }),
                 "_TestScale: aux state 0 has shape (2,) but (1,) is required"));
  CHECK(Contains(ErrorOf([&] {
                   Run(op, {d, w, count}, {{"k", "1"}});
                 }),
                 "_TestScale: unknown parameter 'k'"));
}
