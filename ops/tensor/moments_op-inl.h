// moments (MXNet's): parameters, the reduction's plan and the computation
// over MomentsKernels<xpu>, shared by the CPU (moments_op.cc) and GPU
// (moments_op.cu) registrations. The mean and the population variance over
// axes, two passes in double; the gradient dx = dmean / N + dvar 2 (x -
// mean) / N.
#pragma once

#include <optional>
#include <vector>

#include "engine/op/float_dispatch.h"
#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/op.h"
#include "engine/op/params.h"
#include "ops/tensor/reduce_utils.h"

namespace tessera::op {

struct MomentsParam : Params<MomentsParam> {
  std::optional<std::vector<int64_t>> axes;
  bool keepdims = false;
  static void Declare(ParamDecl<MomentsParam>& d) {
    d.field("axes", &MomentsParam::axes)
        .set_default(std::nullopt)
        .set_axis()
        .describe("The axes to compute the moments over (required, as MXNet's).");
    d.field("keepdims", &MomentsParam::keepdims)
        .set_default(false)
        .describe("Keep the reduced axes in the results, with size 1.");
  }
};

inline AxisMask MomentsMask(const NodeAttrs& attrs, const Shape& s) {
  const auto& p = ParamsOf<MomentsParam>(attrs);
  TS_CHECK(p.axes && !p.axes->empty())
      << OpLabel(attrs) << ": axes is required (the axes to compute the moments over)";
  return ReduceAxesMask(s, p.axes, false, OpLabel(attrs));
}

inline ReducePlan MomentsPlan(const NodeAttrs& attrs, const Shape& s) {
  return MakeReducePlan(s, KeepDimsShape(s, MomentsMask(attrs, s)));
}

// The device half: every output's mean and variance; the gradient of every
// input element.
template <typename xpu>
struct MomentsKernels;

// out (req)= v: every result here is formed in double, and so is the sum
// with the old value for kAddTo.
template <typename T>
TS_XINLINE void AssignFromDouble(T& out, double v, OpReqType req) {
  if (req != kNullOp) out = T(req == kAddTo ? double(out) + v : v);
}

// The gradient of input element `at`, from its output o's dmean, dvar, mean.
struct MomentsGradElem {
  template <typename T>
  TS_XINLINE static void Map(int64_t o, int64_t at, const ReducePlan& plan, const T* dm,
                             const T* dv, const T* x, const T* mean, T* dx, OpReqType req) {
    const double n = double(plan.red_size);
    const double g = double(dm[o]) / n + 2 * double(dv[o]) / n * (double(x[at]) - double(mean[o]));
    AssignFromDouble(dx[at], g, req);
  }
};

// in: data; out: mean, var.
template <typename xpu>
void MomentsForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp && req[1] == kNullOp) return;
  const ReducePlan plan = MomentsPlan(attrs, in[0].shape());
  ForFloatAndDouble(attrs, in[0].dtype(), "moments", [&](auto zero) {
    using T = decltype(zero);
    MomentsKernels<xpu>::Forward(ctx, plan, in[0].dptr<T>(), out[0].dptr<T>(), req[0],
                                 out[1].dptr<T>(), req[1]);
  });
}

// in: dmean, dvar, data, mean; out: ddata.
template <typename xpu>
void MomentsBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const ReducePlan plan = MomentsPlan(attrs, in[2].shape());
  ForFloatAndDouble(attrs, in[2].dtype(), "_backward_moments", [&](auto zero) {
    using T = decltype(zero);
    MomentsKernels<xpu>::Backward(ctx, plan, in[0].dptr<T>(), in[1].dptr<T>(), in[2].dptr<T>(),
                                  in[3].dptr<T>(), out[0].dptr<T>(), req[0]);
  });
}

}  // namespace tessera::op
