// SimpleOp: the reference's unified unary/binary operator API. Test-only ops
// of every function and gradient form are registered here; smooth_l1 is the
// real op registered through it.
#include <doctest/doctest.h>

#include <cmath>

#include "engine/legacy_op/simple_op.h"
#include "engine/ndarray/imperative.h"
#include "engine/resource/random.h"
#include "engine/resource/resource.h"
#include "tests/cpp/op_test_util.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using namespace tessera::op;
using tessera::test::Array;
using tessera::test::CheckClose;
using tessera::test::CheckNumericGradient;
using tessera::test::Contains;
using tessera::test::ErrorOf;
using tessera::test::RandomArray;
using tessera::test::Run;

namespace {

// ---- Helpers for the test functions: plain CPU loops over any float dtype.

double At(const TBlob& b, int64_t i) {
  return SwitchDType(b.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return static_cast<double>(static_cast<AccType<T>>(b.dptr<T>()[i]));
  });
}

// out[i] (req)= value(i). Each element is read before it is written, so the
// functions are safe in place.
template <typename F>
void Write(TBlob* out, OpReqType req, F value) {
  SwitchFloatDType(out->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out->dptr<T>();
    SwitchReq(req, [&](auto r) {
      for (int64_t i = 0; i < out->Size(); ++i) AssignReq<r.value>(o[i], value(i));
    });
  });
}

// y = x^2; gradient from the input (T2), out_grad may become in_grad.
void SquareForward(const TBlob& src, const EnvArguments&, TBlob* ret, OpReqType req, RunContext) {
  Write(ret, req, [&](int64_t i) { return At(src, i) * At(src, i); });
}
void SquareBackward(const OutputGrad& g, const Input0& x, const EnvArguments&, TBlob* in_grad,
                    OpReqType req, RunContext) {
  Write(in_grad, req, [&](int64_t i) { return 2 * At(x.data, i) * At(g.data, i); });
}

// y = exp(x); gradient from the output value (T1); in place both ways.
void ExpForward(const TBlob& src, const EnvArguments&, TBlob* ret, OpReqType req, RunContext) {
  Write(ret, req, [&](int64_t i) { return std::exp(At(src, i)); });
}
void ExpBackward(const OutputGrad& g, const OutputValue& y, const EnvArguments&, TBlob* in_grad,
                 OpReqType req, RunContext) {
  Write(in_grad, req, [&](int64_t i) { return At(y.data, i) * At(g.data, i); });
}

// y = scalar * x; gradient from out_grad alone (T0).
void ScaleForward(const TBlob& src, const EnvArguments& env, TBlob* ret, OpReqType req,
                  RunContext) {
  Write(ret, req, [&](int64_t i) { return env.scalar * At(src, i); });
}
void ScaleBackward(const OutputGrad& g, const EnvArguments& env, TBlob* in_grad, OpReqType req,
                   RunContext) {
  Write(in_grad, req, [&](int64_t i) { return env.scalar * At(g.data, i); });
}

// y = lhs * rhs; gradient from both inputs (binary T1). Both gradients of
// element i are computed before either is written (out_grad may be lhs_grad).
void MulForward(const TBlob& lhs, const TBlob& rhs, const EnvArguments&, TBlob* ret, OpReqType req,
                RunContext) {
  Write(ret, req, [&](int64_t i) { return At(lhs, i) * At(rhs, i); });
}
void MulBackward(const OutputGrad& g, const Input0& lhs, const Input1& rhs, const EnvArguments&,
                 TBlob* lhs_grad, TBlob* rhs_grad, OpReqType req_lhs, OpReqType req_rhs,
                 RunContext) {
  std::vector<double> gl, gr;
  for (int64_t i = 0; i < g.data.Size(); ++i) {
    gl.push_back(At(g.data, i) * At(rhs.data, i));
    gr.push_back(At(g.data, i) * At(lhs.data, i));
  }
  Write(lhs_grad, req_lhs, [&](int64_t i) { return gl[i]; });
  Write(rhs_grad, req_rhs, [&](int64_t i) { return gr[i]; });
}

// y = lhs - rhs; gradient from out_grad alone (binary T0).
void SubForward(const TBlob& lhs, const TBlob& rhs, const EnvArguments&, TBlob* ret, OpReqType req,
                RunContext) {
  Write(ret, req, [&](int64_t i) { return At(lhs, i) - At(rhs, i); });
}
void SubBackward(const OutputGrad& g, const EnvArguments&, TBlob* lhs_grad, TBlob* rhs_grad,
                 OpReqType req_lhs, OpReqType req_rhs, RunContext) {
  Write(rhs_grad, req_rhs, [&](int64_t i) { return -At(g.data, i); });
  Write(lhs_grad, req_lhs, [&](int64_t i) { return At(g.data, i); });
}

// y = x^exponent + offset with both as kwargs.
double Kwarg(const EnvArguments& env, const std::string& key, double fallback) {
  for (const auto& [k, v] : env.kwargs)
    if (k == key) return std::stod(v);
  return fallback;
}
void PowForward(const TBlob& src, const EnvArguments& env, TBlob* ret, OpReqType req, RunContext) {
  const double p = Kwarg(env, "exponent", 1), c = Kwarg(env, "offset", 0);
  Write(ret, req, [&](int64_t i) { return std::pow(At(src, i), p) + c; });
}
void PowBackward(const OutputGrad& g, const Input0& x, const EnvArguments& env, TBlob* in_grad,
                 OpReqType req, RunContext) {
  const double p = Kwarg(env, "exponent", 1);
  Write(in_grad, req,
        [&](int64_t i) { return p * std::pow(At(x.data, i), p - 1) * At(g.data, i); });
}

// y = x + u, u uniform on [0, 1) from the random resource, staged through
// the temp-space resource.
void NoiseForward(const TBlob& src, const EnvArguments& env, TBlob* ret, OpReqType req,
                  RunContext) {
  TS_CHECK(env.resource.size() == 2) << "expected two resources";
  const size_t n = static_cast<size_t>(src.Size());
  float* u = env.resource[1].get_space_typed<float>(n);
  resource::FillUniform(env.resource[0].get_random(), u, n, 0.f, 1.f);
  Write(ret, req, [&](int64_t i) { return At(src, i) + u[i]; });
}
void NoiseBackward(const OutputGrad& g, const EnvArguments& env, TBlob* in_grad, OpReqType req,
                   RunContext) {
  TS_CHECK(env.resource.size() == 2) << "the backward gets the resources too";
  Write(in_grad, req, [&](int64_t i) { return At(g.data, i); });
}

// Row sums of a matrix: a shape function that changes the shape.
Shape RowSumShape(const Shape& src, const EnvArguments&) {
  TS_CHECK(src.ndim() == 2) << "_test_rowsum: needs a 2-D input, got " << src;
  return Shape{src[0]};
}
void RowSumForward(const TBlob& src, const EnvArguments&, TBlob* ret, OpReqType req, RunContext) {
  const int64_t cols = src.shape()[1];
  Write(ret, req, [&](int64_t r) {
    double s = 0;
    for (int64_t c = 0; c < cols; ++c) s += At(src, r * cols + c);
    return s;
  });
}
void RowSumBackward(const OutputGrad& g, const Input0& x, const EnvArguments&, TBlob* in_grad,
                    OpReqType req, RunContext) {
  const int64_t cols = x.data.shape()[1];
  Write(in_grad, req, [&](int64_t i) { return At(g.data, i / cols); });
}

// Row-wise dot products of two matrices: a binary shape function.
Shape RowDotShape(const Shape& lhs, const Shape& rhs, const EnvArguments&) {
  TS_CHECK(lhs.ndim() == 2 && lhs == rhs)
      << "_test_rowdot: needs two equal 2-D shapes, got " << lhs << " and " << rhs;
  return Shape{lhs[0]};
}
void RowDotForward(const TBlob& lhs, const TBlob& rhs, const EnvArguments&, TBlob* ret,
                   OpReqType req, RunContext) {
  const int64_t cols = lhs.shape()[1];
  Write(ret, req, [&](int64_t r) {
    double s = 0;
    for (int64_t c = 0; c < cols; ++c) s += At(lhs, r * cols + c) * At(rhs, r * cols + c);
    return s;
  });
}
void RowDotBackward(const OutputGrad& g, const Input0& lhs, const Input1& rhs, const EnvArguments&,
                    TBlob* lhs_grad, TBlob* rhs_grad, OpReqType req_lhs, OpReqType req_rhs,
                    RunContext) {
  const int64_t cols = lhs.data.shape()[1];
  Write(lhs_grad, req_lhs, [&](int64_t i) { return At(g.data, i / cols) * At(rhs.data, i); });
  Write(rhs_grad, req_rhs, [&](int64_t i) { return At(g.data, i / cols) * At(lhs.data, i); });
}

}  // namespace

TS_REGISTER_SIMPLE_OP(_test_square, cpu)
    .set_function(cpu::kDevice, SquareForward, kNoInplace)
    .set_gradient(cpu::kDevice, SquareBackward, kInplaceOutIn)
    .describe("x^2 (test).");
TS_REGISTER_SIMPLE_OP(_test_exp, cpu)
    .set_gradient(cpu::kDevice, ExpBackward, kInplaceOutIn)  // any order
    .set_function(cpu::kDevice, ExpForward, kInplaceInOut)
    .describe("exp(x) (test).");
TS_REGISTER_SIMPLE_OP(_test_scale, cpu)
    .set_function(cpu::kDevice, ScaleForward, kInplaceInOut)
    .set_gradient(cpu::kDevice, ScaleBackward, kInplaceOutIn)
    .set_enable_scalar(true)
    .describe("scalar * x (test).");
TS_REGISTER_SIMPLE_OP(_test_mul, cpu)
    .set_function(cpu::kDevice, MulForward, kInplaceLhsOut)
    .set_gradient(cpu::kDevice, MulBackward, kInplaceOutLhs)
    .describe("lhs * rhs (test).");
TS_REGISTER_SIMPLE_OP(_test_sub, cpu)
    .set_function(cpu::kDevice, SubForward)
    .set_gradient(cpu::kDevice, SubBackward)
    .describe("lhs - rhs (test).");
TS_REGISTER_SIMPLE_OP(_test_pow, cpu)
    .set_function(cpu::kDevice, PowForward)
    .set_gradient(cpu::kDevice, PowBackward)
    .set_enable_kwargs(true)
    .describe("x^exponent + offset (test).");
TS_REGISTER_SIMPLE_OP(_test_noise, cpu)
    .set_function(cpu::kDevice, NoiseForward)
    .set_gradient(cpu::kDevice, NoiseBackward)
    .set_resource_request({ResourceRequest::kRandom, ResourceRequest::kTempSpace})
    .describe("x + uniform noise (test).");
TS_REGISTER_SIMPLE_OP(_test_rowsum, cpu)
    .set_shape_function(RowSumShape)
    .set_function(cpu::kDevice, RowSumForward)
    .set_gradient(cpu::kDevice, RowSumBackward)
    .describe("Row sums (test).");
TS_REGISTER_SIMPLE_OP(_test_rowdot, cpu)
    .set_shape_function(RowDotShape)
    .set_function(cpu::kDevice, RowDotForward)
    .set_gradient(cpu::kDevice, RowDotBackward)
    .describe("Row-wise dot products (test).");
// A forward-only op: no gradient, no backward op.
TS_REGISTER_SIMPLE_OP(_test_forward_only, cpu).set_function(cpu::kDevice, SquareForward);

namespace {

std::vector<std::pair<int, int>> InplaceOf(std::string_view name) {
  const bool scalar = name == "_test_scale" || name == "smooth_l1";
  auto attrs = MakeAttrs(name, scalar ? ParamDict{{"scalar", "1"}} : ParamDict{});
  return Op::GetAttr<FInplaceOption>("FInplaceOption")[attrs->op](*attrs);
}

// The inputs of the backward node FGradient builds for a forward node.
std::vector<NodeEntry> BackwardInputs(std::string_view name, int num_inputs,
                                      ParamDict params = {}) {
  NodePtr n = Node::Create();
  n->attrs.dict = std::move(params);
  Op::Get(name)->ParseAttrs(&n->attrs);
  n->attrs.name = "fwd";
  for (int i = 0; i < num_inputs; ++i) n->inputs.push_back({Node::Variable("x"), 0, 0});
  const std::vector<NodeEntry> grads =
      Op::GetAttr<FGradient>("FGradient")[n->op()](n, {{Node::Variable("ograd"), 0, 0}});
  REQUIRE(!grads.empty());
  CHECK(grads[0].node->op()->name() == "_backward_" + std::string(name));
  CHECK(grads[0].node->control_deps.at(0) == n);
  return grads[0].node->inputs;
}

}  // namespace

TEST_CASE("smooth_l1 matches the reference definition") {
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    INFO(DTypeName(t));
    const double tol = t == DType::kBFloat16 ? 1e-2 : t == DType::kFloat16 ? 1e-3 : 1e-6;
    NDArray x = Array({5}, {-2, -0.5, 0, 0.5, 2}, t);
    NDArray y = Run("smooth_l1", {x}, {{"scalar", "1"}});
    CHECK(y.dtype() == t);
    CheckClose(y, {1.5, 0.125, 0, 0.125, 1.5}, tol, tol);
    // sigma = 2: quadratic on |x| < 0.25.
    CheckClose(Run("smooth_l1", {Array({5}, {-2, -0.2, 0.1, 0.3, 1}, t)}, {{"scalar", "2"}}),
               {1.875, 0.08, 0.02, 0.175, 0.875}, tol, tol);
  }
  // The gradient: sigma^2 x inside, sign(x) outside.
  NDArray x = Array({5}, {-2, -0.2, 0.1, 0.3, 1}, DType::kFloat64);
  NDArray g = Array({5}, {1, 2, 3, 4, 5}, DType::kFloat64);
  CheckClose(Run("_backward_smooth_l1", {g, x}, {{"scalar", "2"}}), {-1, -1.6, 1.2, 4, 5});
}

TEST_CASE("smooth_l1 gradient matches finite differences") {
  NDArray x = Array({2, 4}, {-1.7, -0.9, -0.3, -0.1, 0.2, 0.35, 0.6, 1.3}, DType::kFloat64);
  CHECK(CheckNumericGradient("smooth_l1", {{"scalar", "1.5"}}, {x}));
  CHECK(CheckNumericGradient("smooth_l1", {{"scalar", "0.5"}}, {RandomArray({3, 3}, -4, 4)}));
}

TEST_CASE("smooth_l1 honours add, in place and views") {
  NDArray x = Array({3}, {-2, 0.5, 2});
  NDArray out = Array({3}, {10, 20, 30});
  std::vector<NDArray> outs{out};
  InvokeOptions add;
  add.req = {kAddTo};
  Invoke(MakeAttrs("smooth_l1", {{"scalar", "1"}}), {x}, &outs, add);
  CheckClose(out, {11.5, 20.125, 31.5});
  // The forward is not in place (kNoInplace): the invoker goes through a temporary.
  std::vector<NDArray> self{x};
  Invoke(MakeAttrs("smooth_l1", {{"scalar", "1"}}), {x}, &self);
  CheckClose(x, {1.5, 0.125, 1.5});
  // The gradient may overwrite out_grad (kInplaceOutIn).
  NDArray g = Array({3}, {1, 1, 1});
  NDArray in = Array({3}, {-2, 0.5, 2});
  std::vector<NDArray> gout{g};
  Invoke(MakeAttrs("_backward_smooth_l1", {{"scalar", "1"}}), {g, in}, &gout);
  CheckClose(g, {-1, 0.5, 1});
  // A view: rows 1..2 of a matrix.
  NDArray m = Array({3, 2}, {-2, 2, 0.5, -0.5, 3, -3});
  CheckClose(Run("smooth_l1", {m.Slice(1, 3)}, {{"scalar", "1"}}), {0.125, 0.125, 2.5, 2.5});
  CHECK(InplaceOf("smooth_l1").empty());
  auto battrs = MakeAttrs("_backward_smooth_l1", {{"scalar", "1"}});
  CHECK(Op::GetAttr<FInplaceOption>("FInplaceOption")[battrs->op](*battrs) ==
        std::vector<std::pair<int, int>>{{0, 0}});
}

TEST_CASE("smooth_l1 errors") {
  NDArray x = Array({2}, {1, 2});
  CHECK(Contains(ErrorOf([&] { Run("smooth_l1", {x}); }),
                 "smooth_l1: required parameter 'scalar' is missing"));
  CHECK(Contains(ErrorOf([&] {
                   Run("smooth_l1", {x}, {{"scalar", "one"}});
                 }),
                 "smooth_l1: parameter 'scalar' got 'one'"));
  CHECK(Contains(ErrorOf([&] {
                   Run("smooth_l1", {x}, {{"scalar", "1"}, {"sigma", "1"}});
                 }),
                 "smooth_l1: unknown parameter 'sigma'"));
  CHECK(Contains(ErrorOf([&] {
                   Run("smooth_l1", {x, x}, {{"scalar", "1"}});
                 }),
                 "smooth_l1: takes 1 input, got 2"));
  // Integer data has no smooth_l1: the kernel says so at the next wait.
  CHECK(Contains(
      ErrorOf([&] {
        Run("smooth_l1", {Array({2}, {1, 2}, DType::kInt32)}, {{"scalar", "1"}}).WaitToRead();
      }),
      "smooth_l1"));
  // The backward checks that out_grad and the input agree.
  CHECK(Contains(ErrorOf([&] {
                   Run("_backward_smooth_l1", {Array({3}, {1, 2, 3}), x}, {{"scalar", "1"}});
                 }),
                 "_backward_smooth_l1"));
}

TEST_CASE("unary SimpleOps: T0, T1, T2 gradients, values and requests") {
  NDArray x = Array({2, 2}, {-1, 0.5, 2, 3}, DType::kFloat64);
  CheckClose(Run("_test_square", {x}), {1, 0.25, 4, 9});
  CheckClose(Run("_test_exp", {x}), {std::exp(-1.0), std::exp(0.5), std::exp(2.0), std::exp(3.0)});
  CheckClose(Run("_test_scale", {x}, {{"scalar", "-2"}}), {2, -1, -4, -6});
  CHECK(CheckNumericGradient("_test_square", {}, {RandomArray({3, 2}, -2, 2)}));
  CHECK(CheckNumericGradient("_test_exp", {}, {RandomArray({3, 2}, -2, 2)}));
  CHECK(CheckNumericGradient("_test_scale", {{"scalar", "1.5"}}, {RandomArray({4}, -2, 2)}));
  // The backward reads: T0 out_grad; T1 out_grad and the forward output; T2 out_grad and the input.
  const std::vector<NodeEntry> t0 = BackwardInputs("_test_scale", 1, {{"scalar", "2"}});
  CHECK(t0.size() == 1);
  const std::vector<NodeEntry> t1 = BackwardInputs("_test_exp", 1);
  REQUIRE(t1.size() == 2);
  CHECK(t1[1].node->op()->name() == "_test_exp");
  const std::vector<NodeEntry> t2 = BackwardInputs("_test_square", 1);
  REQUIRE(t2.size() == 2);
  CHECK(t2[1].node->is_variable());
  // In-place options as registered.
  CHECK(InplaceOf("_test_square").empty());
  CHECK(InplaceOf("_test_exp") == std::vector<std::pair<int, int>>{{0, 0}});
  CHECK(InplaceOf("_test_scale") == std::vector<std::pair<int, int>>{{0, 0}});
  // Requests: add, null, in place.
  NDArray out = Array({2, 2}, {1, 1, 1, 1}, DType::kFloat64);
  std::vector<NDArray> outs{out};
  InvokeOptions add;
  add.req = {kAddTo};
  Invoke(MakeAttrs("_test_square"), {x}, &outs, add);
  CheckClose(out, {2, 1.25, 5, 10});
  InvokeOptions null;
  null.req = {kNullOp};
  Invoke(MakeAttrs("_test_square"), {x}, &outs, null);
  CheckClose(out, {2, 1.25, 5, 10});
  NDArray y = Array({3}, {1, 2, 3}, DType::kFloat32);
  std::vector<NDArray> self{y};
  Invoke(MakeAttrs("_test_scale", {{"scalar", "3"}}), {y}, &self);
  CheckClose(y, {3, 6, 9});
  CHECK(y.dtype() == DType::kFloat32);
  // The forward-only op has no gradient and no backward op.
  CheckClose(Run("_test_forward_only", {Array({2}, {3, 4})}), {9, 16});
  CHECK(!Op::GetAttr<FGradient>("FGradient").contains(Op::Get("_test_forward_only")));
  CHECK(Op::Find("_backward__test_forward_only") == nullptr);
  CHECK(!SimpleOpRegEntry::Find("_test_forward_only")->has_gradient());
}

TEST_CASE("binary SimpleOps: T0 and T1 gradients, input names, in place") {
  NDArray a = Array({3}, {1, 2, 3}, DType::kFloat64);
  NDArray b = Array({3}, {4, -5, 6}, DType::kFloat64);
  CheckClose(Run("_test_mul", {a, b}), {4, -10, 18});
  CheckClose(Run("_test_sub", {a, b}), {-3, 7, -3});
  CHECK(CheckNumericGradient(
      "_test_mul", {},
      {RandomArray({2, 3}, -2, 2), RandomArray({2, 3}, -2, 2, DType::kFloat64, 2)}));
  CHECK(CheckNumericGradient(
      "_test_sub", {}, {RandomArray({4}, -2, 2), RandomArray({4}, -2, 2, DType::kFloat64, 3)}));
  CHECK(BackwardInputs("_test_mul", 2).size() == 3);
  CHECK(BackwardInputs("_test_sub", 2).size() == 1);
  const auto& names = Op::GetAttr<FListInputNames>("FListInputNames");
  CHECK(names[Op::Get("_test_mul")](NodeAttrs{}) == std::vector<std::string>{"lhs", "rhs"});
  CHECK(names[Op::Get("_test_square")](NodeAttrs{}) == std::vector<std::string>{"data"});
  CHECK(Op::Get("_test_mul")->arguments().size() == 2);
  CHECK(Op::Get("_backward__test_mul")->NumOutputs(NodeAttrs{}) == 2);
  // Forward in place on lhs; backward in place on out_grad -> lhs_grad.
  CHECK(InplaceOf("_test_mul") == std::vector<std::pair<int, int>>{{0, 0}});
  std::vector<NDArray> self{a};
  Invoke(MakeAttrs("_test_mul"), {a, b}, &self);
  CheckClose(a, {4, -10, 18});
  NDArray g = Array({3}, {1, 1, 2}, DType::kFloat64);
  NDArray lhs = Array({3}, {1, 2, 3}, DType::kFloat64);
  std::vector<NDArray> grads{g, NDArray(Shape{3}, Context::CPU(), DType::kFloat64)};
  Invoke(MakeAttrs("_backward__test_mul"), {g, lhs, b}, &grads);
  CheckClose(g, {4, -5, 12});
  CheckClose(grads[1], {1, 2, 6});
  // Binary T0 with add requests on both gradients.
  NDArray gl = Array({3}, {1, 1, 1}, DType::kFloat64), gr = Array({3}, {1, 1, 1}, DType::kFloat64);
  std::vector<NDArray> acc{gl, gr};
  InvokeOptions add;
  add.req = {kAddTo, kAddTo};
  Invoke(MakeAttrs("_backward__test_sub"), {Array({3}, {1, 2, 3}, DType::kFloat64)}, &acc, add);
  CheckClose(gl, {2, 3, 4});
  CheckClose(gr, {0, -1, -2});
  // Shapes and dtypes must agree.
  CHECK(Contains(ErrorOf([&] {
                   Run("_test_mul", {a, Array({2}, {1, 2}, DType::kFloat64)});
                 }),
                 "_test_mul: input 1 has shape (2,), incompatible with (3,)"));
  CHECK(Contains(ErrorOf([&] {
                   Run("_test_mul", {a, Array({3}, {1, 2, 3})});
                 }),
                 "_test_mul: input 1 has dtype float32 but an earlier argument is float64"));
}

TEST_CASE("kwargs SimpleOp passes every key through") {
  NDArray x = Array({3}, {1, 2, 3}, DType::kFloat64);
  CheckClose(Run("_test_pow", {x}, {{"exponent", "3"}, {"offset", "1"}}), {2, 9, 28});
  CheckClose(Run("_test_pow", {x}), {1, 2, 3});
  CHECK(CheckNumericGradient("_test_pow", {{"exponent", "2.5"}}, {RandomArray({5}, 0.5, 2)}));
  // Symbol attributes ("__...__") are not kwargs.
  CheckClose(Run("_test_pow", {x}, {{"exponent", "2"}, {"__lr_mult__", "2"}}), {1, 4, 9});
  // Ops without kwargs reject unknown keys; scalar ops reject everything but scalar.
  CHECK(Contains(ErrorOf([&] {
                   Run("_test_square", {x}, {{"exponent", "2"}});
                 }),
                 "_test_square: unknown parameter 'exponent' (it takes no parameters)"));
  CHECK(Contains(ErrorOf([&] {
                   Run("_test_scale", {x}, {{"scalar", "2"}, {"exponent", "2"}});
                 }),
                 "_test_scale: unknown parameter 'exponent' (parameters: scalar)"));
}

TEST_CASE("resource requests reach the functions through EnvArguments") {
  const auto& fres = Op::GetAttr<FResourceRequest>("FResourceRequest");
  auto attrs = MakeAttrs("_test_noise");
  REQUIRE(fres[attrs->op](*attrs).size() == 2);
  CHECK(fres[attrs->op](*attrs)[0].type == ResourceRequest::kRandom);
  CHECK(fres[Op::Get("_backward__test_noise")](*attrs).size() == 2);
  CHECK(fres[Op::Get("_test_square")](NodeAttrs{}).empty());
  NDArray x = Array({64}, std::vector<double>(64, 10));
  resource::ResourceManager::Get()->SeedRandom(3);
  const std::vector<double> a = Run("_test_noise", {x}).ToVector();
  resource::ResourceManager::Get()->SeedRandom(3);
  const std::vector<double> b = Run("_test_noise", {x}).ToVector();
  CHECK(a == b);
  for (double v : a) CHECK((v >= 10 && v < 11));
  CheckClose(Run("_backward__test_noise", {Array({2}, {3, 4})}), {3, 4});
}

TEST_CASE("shape functions: unary and binary, with exact backward shapes") {
  NDArray m = Array({2, 3}, {1, 2, 3, 4, 5, 6}, DType::kFloat64);
  NDArray s = Run("_test_rowsum", {m});
  CHECK(s.shape() == Shape{2});
  CheckClose(s, {6, 15});
  CHECK(CheckNumericGradient("_test_rowsum", {}, {RandomArray({3, 4}, -1, 1)}));
  NDArray d = Run("_test_rowdot", {m, m});
  CheckClose(d, {14, 77});
  CHECK(CheckNumericGradient(
      "_test_rowdot", {},
      {RandomArray({2, 3}, -1, 1), RandomArray({2, 3}, -1, 1, DType::kFloat64, 5)}));
  // The backward infers in_grad from the input, and checks out_grad against the shape function.
  NDArray g = Run("_backward__test_rowsum", {Array({2}, {1, 2}, DType::kFloat64), m});
  CHECK(g.shape() == Shape{2, 3});
  CheckClose(g, {1, 1, 1, 2, 2, 2});
  CHECK(Contains(ErrorOf([&] {
                   Run("_backward__test_rowsum", {Array({3}, {1, 2, 3}, DType::kFloat64), m});
                 }),
                 "_backward__test_rowsum: input 0 has shape (3,) but (2,) is required"));
  // Errors raised by the shape functions surface at the call.
  CHECK(Contains(ErrorOf([] {
                   Run("_test_rowsum", {Array({3}, {1, 2, 3})});
                 }),
                 "_test_rowsum: needs a 2-D input, got (3,)"));
  CHECK(Contains(ErrorOf([&] {
                   Run("_test_rowdot", {m, Array({3, 2}, {1, 2, 3, 4, 5, 6}, DType::kFloat64)});
                 }),
                 "_test_rowdot: needs two equal 2-D shapes, got (2,3) and (3,2)"));
}

TEST_CASE("registration mistakes are errors") {
  CHECK(Contains(ErrorOf([] {
                   SimpleOpRegEntry::Register("_test_bad_scalar_kwargs")
                       .set_enable_scalar(true)
                       .set_enable_kwargs(true);
                 }),
                 "_test_bad_scalar_kwargs: scalar and kwargs cannot both be enabled"));
  CHECK(Contains(ErrorOf([] {
                   SimpleOpRegEntry::Register("_test_bad_kwargs_scalar")
                       .set_enable_kwargs(true)
                       .set_enable_scalar(true);
                 }),
                 "scalar and kwargs cannot both be enabled"));
  CHECK(Contains(ErrorOf([] {
                   SimpleOpRegEntry::Register("_test_bad_arity")
                       .set_function(cpu::kDevice, SquareForward)
                       .set_function(cpu::kDevice, MulForward);
                 }),
                 "_test_bad_arity: a binary function on an op registered as unary"));
  CHECK(Contains(ErrorOf([] {
                   SimpleOpRegEntry::Register("_test_bad_grad_arity")
                       .set_function(cpu::kDevice, SquareForward)
                       .set_gradient(cpu::kDevice, SubBackward);
                 }),
                 "a binary gradient on an op registered as unary"));
  CHECK(Contains(ErrorOf([] {
                   SimpleOpRegEntry::Register("_test_bad_inplace")
                       .set_function(cpu::kDevice, SquareForward, kInplaceOutIn);
                 }),
                 "set_function takes kNoInplace or kInplaceInOut, not kInplaceOutIn"));
  CHECK(Contains(ErrorOf([] {
                   SimpleOpRegEntry::Register("_test_bad_grad_inplace")
                       .set_function(cpu::kDevice, MulForward)
                       .set_gradient(cpu::kDevice, MulBackward, kInplaceOutIn);
                 }),
                 "set_gradient takes kNoInplace or kInplaceOutLhs, not kInplaceOutIn"));
  CHECK(Contains(ErrorOf([] {
                   SimpleOpRegEntry::Register("_test_bad_grad_kinds")
                       .set_gradient(cpu::kDevice, SquareBackward)
                       .set_gradient(gpu::kDevice, ExpBackward);
                 }),
                 "the gradient functions of every device must take the same arguments"));
  CHECK(Contains(ErrorOf([] {
                   SimpleOpRegEntry::Register("_test_bad_shape")
                       .set_function(cpu::kDevice, SquareForward)
                       .set_shape_function(RowDotShape);
                 }),
                 "a binary shape function on an op registered as unary"));
  // A device without a function: the invoker says so.
  if (BuiltWithCUDA() && NumGPUs() > 0) {
    CHECK(Contains(ErrorOf([] {
                     Run("_test_square", {Array({2}, {1, 2}, DType::kFloat32, Context::GPU())});
                   }),
                   "_test_square has no GPU implementation"));
  }
}
