// Unary elementwise operators: registration and CPU kernels. Every op reads
// one array and writes one of the same shape and dtype; the functors are in
// elemwise_unary_op-inl.h, the GPU kernels in elemwise_unary_op.cu.
#include "ops/tensor/elemwise_unary_op-inl.h"

namespace tessera::op {

namespace {

std::vector<NodeEntry> ZeroGrad(const NodePtr& n, const std::vector<NodeEntry>&) {
  return MakeZeroGradNodes(n);
}

std::vector<std::string> DataInputName(const NodeAttrs&) {
  return {"data"};
}

}  // namespace

void ParseClipParam(NodeAttrs* attrs) {
  ParamParser<ClipParam>(attrs);
  const auto& p = ParamsOf<ClipParam>(*attrs);
  TS_CHECK(p.a_min <= p.a_max) << (attrs->op ? attrs->op->name() : std::string("clip"))
                               << ": parameter 'a_min' (" << p.a_min
                               << ") must not exceed 'a_max' (" << p.a_max << ")";
}

// The attributes every unary op shares.
#define TS_REGISTER_UNARY(name, fn)                                          \
  TS_REGISTER_OP(name)                                                       \
      .set_num_inputs(1)                                                     \
      .set_num_outputs(1)                                                    \
      .add_argument("data", "NDArray", "Input array.")                       \
      .set_attr<FListInputNames>("FListInputNames", DataInputName)           \
      .set_attr<FInferShape>("FInferShape", ElemwiseShape<1, 1>)             \
      .set_attr<FInferType>("FInferType", ElemwiseTypeOf<unary::fn::kTypes>) \
      .set_attr<FInplaceOption>("FInplaceOption", InplaceAllInputs<1>)       \
      .set_attr<FLayoutClasses>("FLayoutClasses", ElementwiseLayout)         \
      .set_attr<FCompute>(kFComputeCPU, UnaryCompute<cpu, unary::fn>);
TS_ELEMWISE_UNARY_OPS(TS_REGISTER_UNARY)
#undef TS_REGISTER_UNARY

// Backward ops: (output gradient, forward input or output) -> input gradient.
#define TS_REGISTER_UNARY_GRAD(name, fn)                                     \
  TS_REGISTER_OP(name)                                                       \
      .set_num_inputs(2)                                                     \
      .set_num_outputs(1)                                                    \
      .set_attr<TIsBackward>("TIsBackward", true)                            \
      .set_attr<FInferShape>("FInferShape", ElemwiseShape<2, 1>)             \
      .set_attr<FInferType>("FInferType", ElemwiseTypeOf<unary::fn::kTypes>) \
      .set_attr<FInplaceOption>("FInplaceOption", InplaceAllInputs<2>)       \
      .set_attr<FLayoutClasses>("FLayoutClasses", ElementwiseLayout)         \
      .set_attr<FCompute>(kFComputeCPU, UnaryGradCompute<cpu, unary::fn>);
TS_ELEMWISE_UNARY_GRAD_OPS(TS_REGISTER_UNARY_GRAD)
#undef TS_REGISTER_UNARY_GRAD

TS_REGISTER_OP(identity).add_alias("_copy");

TS_REGISTER_OP(identity)
    .describe("Returns a copy of the input (alias _copy).\n\nExample: identity([1, -2]) = [1, -2].")
    .set_attr<FGradient>("FGradient", ElemwiseGradApply{"_copy"});
TS_REGISTER_OP(logical_not)
    .describe(
        "Logical not: 1 where the input is 0, else 0, in the input's dtype.\n\nExample: "
        "logical_not([0, 2, -1]) = [1, 0, 0].")
    .set_attr<FGradient>("FGradient", ZeroGrad);
TS_REGISTER_OP(abs)
    .describe(
        "Absolute value |x|, elementwise; integers too.\n\nExample: abs([-2, 0, 3]) = [2, 0, 3].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_abs"});
TS_REGISTER_OP(_backward_abs)
    .describe("Gradient of abs: the output gradient times its derivative, from the forward input.");
TS_REGISTER_OP(sign)
    .describe(
        "Sign of x: -1, 0 or 1 (NaN stays NaN); integers too. Its gradient is zero.\n\nExample: "
        "sign([-2, 0, 3]) = [-1, 0, 1].")
    .set_attr<FGradient>("FGradient", ZeroGrad);
TS_REGISTER_OP(negative)
    .describe(
        "Numerical negative -x, elementwise; integers too (unsigned ones wrap around).\n\nExample: "
        "negative([1, -2]) = [-1, 2].")
    .set_attr<FGradient>("FGradient", ElemwiseGradApply{"negative"});
TS_REGISTER_OP(square)
    .describe("x^2, elementwise; integers too.\n\nExample: square([2, -3]) = [4, 9].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_square"});
TS_REGISTER_OP(_backward_square)
    .describe(
        "Gradient of square: the output gradient times its derivative, from the forward input.");
TS_REGISTER_OP(relu)
    .describe(
        "Rectified linear unit max(x, 0), elementwise; integers too. NaN passes through, and "
        "its gradient is NaN (MXNet's rule).\n\nExample: relu([-1, 2]) = [0, 2].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseOut{"_backward_relu"});
TS_REGISTER_OP(_backward_relu)
    .describe(
        "Gradient of relu: the output gradient times its derivative, from the forward output.");
TS_REGISTER_OP(floor)
    .describe(
        "Largest integer not greater than x. Integers pass unchanged; the gradient is "
        "zero.\n\nExample: floor([-2.5, 1.5]) = [-3, 1].")
    .set_attr<FGradient>("FGradient", ZeroGrad);
TS_REGISTER_OP(ceil)
    .describe(
        "Smallest integer not less than x. Integers pass unchanged; the gradient is "
        "zero.\n\nExample: ceil([-2.5, 1.5]) = [-2, 2].")
    .set_attr<FGradient>("FGradient", ZeroGrad);
TS_REGISTER_OP(round)
    .describe(
        "Nearest integer, halves rounded away from zero. Integers pass unchanged; the gradient is "
        "zero.\n\nExample: round([-2.5, 1.5, 0.4]) = [-3, 2, 0].")
    .set_attr<FGradient>("FGradient", ZeroGrad);
TS_REGISTER_OP(rint)
    .describe(
        "Nearest integer; a half goes to the floor, as in MXNet (not to even, as C's rint). "
        "Integers pass unchanged; the gradient is zero.\n\nExample: rint([-2.5, 1.5, 0.4]) = "
        "[-3, 1, 0].")
    .set_attr<FGradient>("FGradient", ZeroGrad);
TS_REGISTER_OP(trunc)
    .describe(
        "Integer part of x (rounds toward zero). Integers pass unchanged; the gradient is "
        "zero.\n\nExample: trunc([-2.7, 1.7]) = [-2, 1].")
    .set_attr<FGradient>("FGradient", ZeroGrad);
TS_REGISTER_OP(fix)
    .describe(
        "Rounds toward zero to the nearest integer, as numpy.fix. Integers pass unchanged; the "
        "gradient is zero.\n\nExample: fix([-2.7, 1.7]) = [-2, 1].")
    .set_attr<FGradient>("FGradient", ZeroGrad);
TS_REGISTER_OP(reciprocal)
    .describe(
        "1 / x, elementwise (floating point only).\n\nExample: reciprocal([2, -4]) = [0.5, -0.25].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_reciprocal"});
TS_REGISTER_OP(_backward_reciprocal)
    .describe(
        "Gradient of reciprocal: the output gradient times its derivative, from the forward "
        "input.");
TS_REGISTER_OP(sqrt)
    .describe(
        "Square root, elementwise (floating point only; NaN for negative x).\n\nExample: sqrt([4, "
        "9]) = [2, 3].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseOut{"_backward_sqrt"});
TS_REGISTER_OP(_backward_sqrt)
    .describe(
        "Gradient of sqrt: the output gradient times its derivative, from the forward output.");
TS_REGISTER_OP(rsqrt)
    .describe(
        "1 / sqrt(x), elementwise (floating point only).\n\nExample: rsqrt([4, 16]) = [0.5, 0.25].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_rsqrt"});
TS_REGISTER_OP(_backward_rsqrt)
    .describe(
        "Gradient of rsqrt: the output gradient times its derivative, from the forward input.");
TS_REGISTER_OP(cbrt)
    .describe("Cube root, elementwise (floating point only).\n\nExample: cbrt([8, -27]) = [2, -3].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseOut{"_backward_cbrt"});
TS_REGISTER_OP(_backward_cbrt)
    .describe(
        "Gradient of cbrt: the output gradient times its derivative, from the forward output.");
TS_REGISTER_OP(exp)
    .describe("e^x, elementwise (floating point only).\n\nExample: exp([0, 1]) = [1, 2.71828].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseOut{"_backward_exp"});
TS_REGISTER_OP(_backward_exp)
    .describe(
        "Gradient of exp: the output gradient times its derivative, from the forward output.");
TS_REGISTER_OP(expm1)
    .describe(
        "e^x - 1, accurate for small x (floating point only).\n\nExample: expm1([0, 1e-10]) = [0, "
        "1e-10].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_expm1"});
TS_REGISTER_OP(_backward_expm1)
    .describe(
        "Gradient of expm1: the output gradient times its derivative, from the forward input.");
TS_REGISTER_OP(log)
    .describe(
        "Natural logarithm (floating point only; -inf at 0, NaN for negative x).\n\nExample: "
        "log([1, e]) = [0, 1].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_log"});
TS_REGISTER_OP(_backward_log)
    .describe("Gradient of log: the output gradient times its derivative, from the forward input.");
TS_REGISTER_OP(log1p)
    .describe(
        "log(1 + x), accurate for small x (floating point only).\n\nExample: log1p([0, 1e-10]) = "
        "[0, 1e-10].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_log1p"});
TS_REGISTER_OP(_backward_log1p)
    .describe(
        "Gradient of log1p: the output gradient times its derivative, from the forward input.");
TS_REGISTER_OP(log2)
    .describe("Base-2 logarithm (floating point only).\n\nExample: log2([1, 8]) = [0, 3].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_log2"});
TS_REGISTER_OP(_backward_log2)
    .describe(
        "Gradient of log2: the output gradient times its derivative, from the forward input.");
TS_REGISTER_OP(log10)
    .describe("Base-10 logarithm (floating point only).\n\nExample: log10([1, 1000]) = [0, 3].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_log10"});
TS_REGISTER_OP(_backward_log10)
    .describe(
        "Gradient of log10: the output gradient times its derivative, from the forward input.");
TS_REGISTER_OP(sin)
    .describe("Sine of x in radians (floating point only).\n\nExample: sin([0, pi/2]) = [0, 1].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_sin"});
TS_REGISTER_OP(_backward_sin)
    .describe("Gradient of sin: the output gradient times its derivative, from the forward input.");
TS_REGISTER_OP(cos)
    .describe("Cosine of x in radians (floating point only).\n\nExample: cos([0, pi]) = [1, -1].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_cos"});
TS_REGISTER_OP(_backward_cos)
    .describe("Gradient of cos: the output gradient times its derivative, from the forward input.");
TS_REGISTER_OP(tan)
    .describe("Tangent of x in radians (floating point only).\n\nExample: tan([0, pi/4]) = [0, 1].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseOut{"_backward_tan"});
TS_REGISTER_OP(_backward_tan)
    .describe(
        "Gradient of tan: the output gradient times its derivative, from the forward output.");
TS_REGISTER_OP(arcsin)
    .describe(
        "Inverse sine, in [-pi/2, pi/2] (floating point only; NaN outside [-1, 1]).\n\nExample: "
        "arcsin([0, 1]) = [0, 1.5708].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_arcsin"});
TS_REGISTER_OP(_backward_arcsin)
    .describe(
        "Gradient of arcsin: the output gradient times its derivative, from the forward input.");
TS_REGISTER_OP(arccos)
    .describe(
        "Inverse cosine, in [0, pi] (floating point only; NaN outside [-1, 1]).\n\nExample: "
        "arccos([1, 0]) = [0, 1.5708].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_arccos"});
TS_REGISTER_OP(_backward_arccos)
    .describe(
        "Gradient of arccos: the output gradient times its derivative, from the forward input.");
TS_REGISTER_OP(arctan)
    .describe(
        "Inverse tangent, in (-pi/2, pi/2) (floating point only).\n\nExample: arctan([0, 1]) = [0, "
        "0.785398].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_arctan"});
TS_REGISTER_OP(_backward_arctan)
    .describe(
        "Gradient of arctan: the output gradient times its derivative, from the forward input.");
TS_REGISTER_OP(sinh)
    .describe("Hyperbolic sine (floating point only).\n\nExample: sinh([0, 1]) = [0, 1.1752].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_sinh"});
TS_REGISTER_OP(_backward_sinh)
    .describe(
        "Gradient of sinh: the output gradient times its derivative, from the forward input.");
TS_REGISTER_OP(cosh)
    .describe("Hyperbolic cosine (floating point only).\n\nExample: cosh([0, 1]) = [1, 1.54308].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_cosh"});
TS_REGISTER_OP(_backward_cosh)
    .describe(
        "Gradient of cosh: the output gradient times its derivative, from the forward input.");
TS_REGISTER_OP(tanh)
    .describe("Hyperbolic tangent (floating point only).\n\nExample: tanh([0, 1]) = [0, 0.761594].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseOut{"_backward_tanh"});
TS_REGISTER_OP(_backward_tanh)
    .describe(
        "Gradient of tanh: the output gradient times its derivative, from the forward output.");
TS_REGISTER_OP(arcsinh)
    .describe(
        "Inverse hyperbolic sine (floating point only).\n\nExample: arcsinh([0, 1]) = [0, "
        "0.881374].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_arcsinh"});
TS_REGISTER_OP(_backward_arcsinh)
    .describe(
        "Gradient of arcsinh: the output gradient times its derivative, from the forward input.");
TS_REGISTER_OP(arccosh)
    .describe(
        "Inverse hyperbolic cosine (floating point only; NaN below 1).\n\nExample: arccosh([1, 2]) "
        "= [0, 1.31696].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_arccosh"});
TS_REGISTER_OP(_backward_arccosh)
    .describe(
        "Gradient of arccosh: the output gradient times its derivative, from the forward input.");
TS_REGISTER_OP(arctanh)
    .describe(
        "Inverse hyperbolic tangent (floating point only; NaN outside [-1, 1]).\n\nExample: "
        "arctanh([0, 0.5]) = [0, 0.549306].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_arctanh"});
TS_REGISTER_OP(_backward_arctanh)
    .describe(
        "Gradient of arctanh: the output gradient times its derivative, from the forward input.");
TS_REGISTER_OP(sigmoid)
    .describe(
        "Logistic sigmoid 1 / (1 + e^-x) (floating point only).\n\nExample: sigmoid([0]) = [0.5].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseOut{"_backward_sigmoid"});
TS_REGISTER_OP(_backward_sigmoid)
    .describe(
        "Gradient of sigmoid: the output gradient times its derivative, from the forward output.");
TS_REGISTER_OP(softsign)
    .describe("x / (1 + |x|) (floating point only).\n\nExample: softsign([1, -3]) = [0.5, -0.75].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_softsign"});
TS_REGISTER_OP(_backward_softsign)
    .describe(
        "Gradient of softsign: the output gradient times its derivative, from the forward input.");
TS_REGISTER_OP(erf)
    .describe(
        "Gauss error function (floating point only).\n\nExample: erf([0, 1]) = [0, 0.842701].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_erf"});
TS_REGISTER_OP(_backward_erf)
    .describe("Gradient of erf: the output gradient times its derivative, from the forward input.");
TS_REGISTER_OP(erfinv)
    .describe(
        "Inverse Gauss error function (floating point only; +-inf at +-1, NaN outside [-1, "
        "1]).\n\nExample: erfinv([0, 0.5]) = [0, 0.476936].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseOut{"_backward_erfinv"});
TS_REGISTER_OP(_backward_erfinv)
    .describe(
        "Gradient of erfinv: the output gradient times sqrt(pi) / 2 * e^(y^2), from the forward "
        "output.");
TS_REGISTER_OP(degrees)
    .describe(
        "Radians to degrees, x * 180 / pi (floating point only).\n\nExample: degrees([0, "
        "3.14159265]) = [0, 180].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_degrees"});
TS_REGISTER_OP(_backward_degrees)
    .describe("Gradient of degrees: the output gradient times 180 / pi.");
TS_REGISTER_OP(radians)
    .describe(
        "Degrees to radians, x * pi / 180 (floating point only).\n\nExample: radians([0, 180]) = "
        "[0, 3.141593].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_radians"});
TS_REGISTER_OP(_backward_radians)
    .describe("Gradient of radians: the output gradient times pi / 180.");
TS_REGISTER_OP(log_sigmoid)
    .describe(
        "log(1 / (1 + e^-x)), without overflow for large |x| (floating point only).\n\nExample: "
        "log_sigmoid([0]) = [-0.693147].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseOut{"_backward_log_sigmoid"});
TS_REGISTER_OP(_backward_log_sigmoid)
    .describe(
        "Gradient of log_sigmoid: the output gradient times 1 - e^y, from the forward output.");
TS_REGISTER_OP(mish)
    .describe(
        "Mish activation, x * tanh(log(1 + e^x)) (floating point only).\n\nExample: mish([0, 1]) "
        "= [0, 0.865098].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_mish"});
TS_REGISTER_OP(_backward_mish)
    .describe(
        "Gradient of mish: the output gradient times tanh(sp) + x (1 - tanh(sp)^2) sigmoid(x), "
        "sp = log(1 + e^x), from the forward input.");
TS_REGISTER_OP(gamma)
    .describe(
        "Gamma function (floating point only; its gradient is gamma(x) digamma(x)).\n\nExample: "
        "gamma([1, 5]) = [1, 24].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_gamma"});
TS_REGISTER_OP(_backward_gamma)
    .describe(
        "Gradient of gamma: the output gradient times its derivative, from the forward input.");
TS_REGISTER_OP(gammaln)
    .describe(
        "log|gamma(x)| (floating point only; its gradient is digamma(x)).\n\nExample: gammaln([1, "
        "5]) = [0, 3.17805].")
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_gammaln"});
TS_REGISTER_OP(_backward_gammaln)
    .describe(
        "Gradient of gammaln: the output gradient times its derivative, from the forward input.");

TS_REGISTER_OP(clip)
    .describe(R"(Clips every element into [a_min, a_max]; integers too.

The gradient passes where a_min <= x <= a_max and is zero elsewhere.
Example: clip([-2, 0.5, 3], a_min=0, a_max=1) = [0, 0.5, 1].)")
    .set_num_inputs(1)
    .set_num_outputs(1)
    .set_attr_parser(ParseClipParam)
    .add_argument("data", "NDArray", "Input array.")
    .add_arguments(ClipParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataInputName)
    .set_attr<FInferShape>("FInferShape", ElemwiseShape<1, 1>)
    .set_attr<FInferType>("FInferType", ElemwiseTypeOf<kNumericTypes>)
    .set_attr<FInplaceOption>("FInplaceOption", InplaceAllInputs<1>)
    .set_attr<FCompute>(kFComputeCPU, ClipCompute<cpu>)
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_clip"});

TS_REGISTER_OP(hard_sigmoid)
    .describe(R"(max(0, min(1, alpha * x + beta)) (floating point only), MXNet's hard_sigmoid.

The gradient is alpha where 0 < alpha * x + beta < 1 and zero elsewhere.
Example: hard_sigmoid([-3, 0, 1, 3]) = [0, 0.5, 0.7, 1].)")
    .set_num_inputs(1)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<HardSigmoidParam>)
    .add_argument("data", "NDArray", "Input array.")
    .add_arguments(HardSigmoidParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataInputName)
    .set_attr<FInferShape>("FInferShape", ElemwiseShape<1, 1>)
    .set_attr<FInferType>("FInferType", ElemwiseTypeOf<kFloatTypes>)
    .set_attr<FInplaceOption>("FInplaceOption", InplaceAllInputs<1>)
    .set_attr<FCompute>(kFComputeCPU, HardSigmoidCompute<cpu>)
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_hard_sigmoid"});

TS_REGISTER_OP(_backward_hard_sigmoid)
    .describe("Gradient of hard_sigmoid: the output gradient times alpha inside the ramp, else 0.")
    .set_num_inputs(2)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<HardSigmoidParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", ElemwiseShape<2, 1>)
    .set_attr<FInferType>("FInferType", ElemwiseTypeOf<kFloatTypes>)
    .set_attr<FInplaceOption>("FInplaceOption", InplaceAllInputs<2>)
    .set_attr<FCompute>(kFComputeCPU, HardSigmoidGradCompute<cpu>);

TS_REGISTER_OP(_backward_clip)
    .describe("Gradient of clip: the output gradient where a_min <= x <= a_max, else 0.")
    .set_num_inputs(2)
    .set_num_outputs(1)
    .set_attr_parser(ParseClipParam)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", ElemwiseShape<2, 1>)
    .set_attr<FInferType>("FInferType", ElemwiseTypeOf<kNumericTypes>)
    .set_attr<FInplaceOption>("FInplaceOption", InplaceAllInputs<2>)
    .set_attr<FCompute>(kFComputeCPU, ClipGradCompute<cpu>);

}  // namespace tessera::op
