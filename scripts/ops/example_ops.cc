// The reference's two example operators as a C++ plugin, built outside the
// tree (CMakeLists.txt beside this file) and loaded at run time:
//
//   tessera --load-ops build/libtessera_example_ops.so
//   > mx.nd.plugin_quadratic(x, {a = 1, b = 2, c = 3})
//
// Tessera already has ops named `quadratic` and `smooth_l1`, and a plugin
// may not take an existing name, so these are `plugin_quadratic` (written
// the attribute way) and `plugin_smooth_l1` (written with SimpleOp).
//
// Everything lives in this plugin's own namespace: a function with the same
// mangled name as one in tessera would bind to tessera's copy at load time.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "ops/custom/op_plugin.h"

namespace tessera_example_ops {

using namespace tessera;
using namespace tessera::op;

// ---- plugin_quadratic: y = a x^2 + b x + c, dy/dx = 2 a x + b.

struct QuadraticParam : Params<QuadraticParam> {
  float a = 0, b = 0, c = 0;
  static void Declare(ParamDecl<QuadraticParam>& d) {
    d.field("a", &QuadraticParam::a).set_default(0.f).describe("Coefficient of x^2.");
    d.field("b", &QuadraticParam::b).set_default(0.f).describe("Coefficient of x.");
    d.field("c", &QuadraticParam::c).set_default(0.f).describe("Constant term.");
  }
};

// Horner's form, in the accumulation type (float for 16-bit inputs).
template <int req>
struct QuadraticKernel {
  template <typename T>
  static void Map(int64_t i, T* y, const T* x, float a, float b, float c) {
    const AccType<T> v = x[i];
    AssignReq<req>(y[i], (a * v + b) * v + c);
  }
};

template <int req>
struct QuadraticGradKernel {
  template <typename T>
  static void Map(int64_t i, T* dx, const T* dy, const T* x, float a, float b) {
    const AccType<T> v = x[i];
    AssignReq<req>(dx[i], static_cast<AccType<T>>(dy[i]) * (2 * a * v + b));
  }
};

void QuadraticCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<QuadraticParam>(attrs);
  SwitchFloatDType(
      out[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        SwitchReq(req[0], [&](auto r) {
          Kernel<QuadraticKernel<r.value>, cpu>::Launch(
              ctx.run_ctx, out[0].Size(), out[0].dptr<T>(), in[0].dptr<T>(), p.a, p.b, p.c);
        });
      },
      "plugin_quadratic");
}

// Inputs: the output gradient, then the forward input.
void QuadraticGradCompute(const NodeAttrs& attrs, const OpContext& ctx,
                          const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                          const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<QuadraticParam>(attrs);
  SwitchFloatDType(
      out[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        SwitchReq(req[0], [&](auto r) {
          Kernel<QuadraticGradKernel<r.value>, cpu>::Launch(ctx.run_ctx, out[0].Size(),
                                                            out[0].dptr<T>(), in[0].dptr<T>(),
                                                            in[1].dptr<T>(), p.a, p.b);
        });
      },
      "_backward_plugin_quadratic");
}

// ---- plugin_smooth_l1 with sigma = `scalar`, s = sigma^2:
//   f(x) = s x^2 / 2 for |x| < 1/s, |x| - 1/(2 s) beyond; f'(x) = s x inside, sign(x) beyond.

template <int req>
struct SmoothL1Kernel {
  template <typename T>
  static void Map(int64_t i, T* y, const T* x, double s) {
    const double v = static_cast<double>(x[i]);
    const double r = std::abs(v) < 1 / s ? 0.5 * s * v * v : std::abs(v) - 0.5 / s;
    AssignReq<req>(y[i], static_cast<AccType<T>>(r));
  }
};

template <int req>
struct SmoothL1GradKernel {
  template <typename T>
  static void Map(int64_t i, T* dx, const T* dy, const T* x, double s) {
    const double v = static_cast<double>(x[i]);
    const double d = std::abs(v) < 1 / s ? s * v : (v > 0 ? 1.0 : -1.0);
    AssignReq<req>(dx[i], static_cast<AccType<T>>(static_cast<double>(dy[i]) * d));
  }
};

void SmoothL1Forward(const TBlob& src, const EnvArguments& env, TBlob* ret, OpReqType req,
                     RunContext ctx) {
  TS_CHECK(env.scalar != 0) << "plugin_smooth_l1: scalar (sigma) must not be 0";
  SwitchFloatDType(
      ret->dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        SwitchReq(req, [&](auto r) {
          Kernel<SmoothL1Kernel<r.value>, cpu>::Launch(ctx, ret->Size(), ret->dptr<T>(),
                                                       src.dptr<T>(), env.scalar * env.scalar);
        });
      },
      "plugin_smooth_l1");
}

// The gradient reads the forward input (the reference's UnaryGradFunctionT2).
void SmoothL1Backward(const OutputGrad& out_grad, const Input0& in_data, const EnvArguments& env,
                      TBlob* in_grad, OpReqType req, RunContext ctx) {
  SwitchFloatDType(
      in_grad->dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        SwitchReq(req, [&](auto r) {
          Kernel<SmoothL1GradKernel<r.value>, cpu>::Launch(
              ctx, in_grad->Size(), in_grad->dptr<T>(), out_grad.data.dptr<T>(),
              in_data.data.dptr<T>(), env.scalar * env.scalar);
        });
      },
      "_backward_plugin_smooth_l1");
}

}  // namespace tessera_example_ops

// Runs when the loader calls it, after the ABI check.
TESSERA_OP_PLUGIN() {
  using namespace tessera::op;
  using namespace tessera_example_ops;

  TS_REGISTER_OP(plugin_quadratic)
      .describe(R"(y = a x^2 + b x + c, elementwise (a plugin's copy of `quadratic`).

Example: plugin_quadratic([1, 2, 3], a=1, b=2, c=3) = [6, 11, 18].)")
      .set_num_inputs(1)
      .set_num_outputs(1)
      .set_attr_parser(ParamParser<QuadraticParam>)
      .add_argument("data", "NDArray", "Input array.")
      .add_arguments(QuadraticParam::Fields())
      .set_attr<FListInputNames>("FListInputNames",
                                 [](const NodeAttrs&) { return std::vector<std::string>{"data"}; })
      .set_attr<FInferShape>("FInferShape", ElemwiseShape<1, 1>)
      .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
      .set_attr<FInplaceOption>("FInplaceOption",
                                [](const NodeAttrs&) {
                                  return std::vector<std::pair<int, int>>{{0, 0}};
                                })
      .set_attr<FCompute>(kFComputeCPU, QuadraticCompute)
      .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_plugin_quadratic"});

  TS_REGISTER_OP(_backward_plugin_quadratic)
      .describe("Gradient of plugin_quadratic: out_grad * (2 a x + b).")
      .set_num_inputs(2)
      .set_num_outputs(1)
      .set_attr_parser(ParamParser<QuadraticParam>)
      .set_attr<TIsBackward>("TIsBackward", true)
      .set_attr<FInferShape>("FInferShape", ElemwiseShape<2, 1>)
      .set_attr<FInferType>("FInferType", ElemwiseType<2, 1>)
      .set_attr<FCompute>(kFComputeCPU, QuadraticGradCompute);

  // Not in place: the gradient reads the forward input. The gradient may
  // overwrite out_grad, which nothing reads after it.
  TS_REGISTER_SIMPLE_OP(plugin_smooth_l1, cpu)
      .set_function(cpu::kDevice, SmoothL1Forward, kNoInplace)
      .set_gradient(cpu::kDevice, SmoothL1Backward, kInplaceOutIn)
      .set_enable_scalar(true)
      .describe(
          R"(Smooth L1 loss, elementwise, with sigma = `scalar` (a plugin's copy of `smooth_l1`):

    f(x) = 0.5 (sigma x)^2        if |x| < 1 / sigma^2
           |x| - 0.5 / sigma^2    otherwise

Example: plugin_smooth_l1([-2, -0.5, 0, 0.5, 2], scalar=1) = [1.5, 0.125, 0, 0.125, 1.5].)");
}
