// moments (MXNet's): the mean and the population variance over axes, and
// their gradient dx = dmean / N + dvar 2 (x - mean) / N.
#include <optional>
#include <vector>

#include "engine/op/float_dispatch.h"
#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/node.h"
#include "engine/op/op.h"
#include "engine/op/params.h"
#include "ops/tensor/reduce_utils.h"

namespace tessera::op {
namespace {

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

AxisMask MaskOf(const NodeAttrs& attrs, const Shape& s) {
  const auto& p = ParamsOf<MomentsParam>(attrs);
  TS_CHECK(p.axes && !p.axes->empty())
      << OpLabel(attrs) << ": axes is required (the axes to compute the moments over)";
  return ReduceAxesMask(s, p.axes, false, OpLabel(attrs));
}

bool MomentsShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& s = (*in)[0];
  if (!s.known()) return false;
  const Shape r = ReducedShape(s, MaskOf(attrs, s), ParamsOf<MomentsParam>(attrs).keepdims);
  AssignShape(attrs, out, 0, r, "mean");
  AssignShape(attrs, out, 1, r, "var");
  return true;
}

// Calls fn(o, base) for every output o, split over the op's threads;
// element r of its reduction is at base + plan.RedOffset(r).
template <typename F>
void ForEachOutput(const OpContext& ctx, const ReducePlan& plan, int64_t work, F&& fn) {
  [[maybe_unused]] const int threads = CpuThreads(ctx.run_ctx, work);
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#endif
  for (int64_t o = 0; o < plan.out_size; ++o) fn(o, plan.OutBase(o));
}

ReducePlan PlanOf(const NodeAttrs& attrs, const Shape& s) {
  return MakeReducePlan(s, KeepDimsShape(s, MaskOf(attrs, s)));
}

// in: data; out: mean, var (two passes, in double).
void MomentsForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const ReducePlan plan = PlanOf(attrs, in[0].shape());
  ForFloatAndDouble(attrs, in[0].dtype(), "moments", [&](auto zero) {
    using T = decltype(zero);
    const T* x = in[0].dptr<T>();
    T* mean = out[0].dptr<T>();
    T* var = out[1].dptr<T>();
    const double n = double(plan.red_size);
    ForEachOutput(ctx, plan, in[0].Size(), [&](int64_t o, int64_t base) {
      double s = 0, ss = 0;
      for (int64_t r = 0; r < plan.red_size; ++r) s += double(x[base + plan.RedOffset(r)]);
      const double m = s / n;
      for (int64_t r = 0; r < plan.red_size; ++r) {
        const double d = double(x[base + plan.RedOffset(r)]) - m;
        ss += d * d;
      }
      if (req[0] != kNullOp) mean[o] = T(req[0] == kAddTo ? double(mean[o]) + m : m);
      if (req[1] != kNullOp) var[o] = T(req[1] == kAddTo ? double(var[o]) + ss / n : ss / n);
    });
  });
}

// in: dmean, dvar, data, mean; out: ddata.
void MomentsBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const ReducePlan plan = PlanOf(attrs, in[2].shape());
  ForFloatAndDouble(attrs, in[2].dtype(), "_backward_moments", [&](auto zero) {
    using T = decltype(zero);
    const T* dm = in[0].dptr<T>();
    const T* dv = in[1].dptr<T>();
    const T* x = in[2].dptr<T>();
    const T* mean = in[3].dptr<T>();
    T* dx = out[0].dptr<T>();
    const bool add = req[0] == kAddTo;
    const double n = double(plan.red_size);
    ForEachOutput(ctx, plan, in[2].Size(), [&](int64_t o, int64_t base) {
      const double a = double(dm[o]) / n, b = 2 * double(dv[o]) / n, m = double(mean[o]);
      for (int64_t r = 0; r < plan.red_size; ++r) {
        const int64_t at = base + plan.RedOffset(r);
        const double g = a + b * (double(x[at]) - m);
        dx[at] = T(add ? double(dx[at]) + g : g);
      }
    });
  });
}

}  // namespace

TS_REGISTER_OP(moments)
    .describe(R"(The mean and the variance of data over `axes` (MXNet's moments): two
outputs, mean = sum(x) / N and var = sum((x - mean)^2) / N (the population
variance), N the number of elements reduced; shaped as a sum over those axes
(keepdims keeps them with size 1).

Example: moments([[1, 2, 3], [4, 5, 6]], axes=(0,)) gives mean [2.5, 3.5,
4.5] and var [2.25, 2.25, 2.25] (Lua: axes = {1}).)")
    .set_num_inputs(1)
    .set_num_outputs(2)
    .set_attr_parser(ParamParser<MomentsParam>)
    .add_argument("data", "NDArray", "The input array.")
    .add_arguments(MomentsParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data"}))
    .set_attr<FListOutputNames>("FListOutputNames",
                                [](const NodeAttrs&) {
                                  return std::vector<std::string>{"mean", "var"};
                                })
    .set_attr<FInferShape>("FInferShape", MomentsShape)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 2>)
    .set_attr<FCompute>(kFComputeCPU, MomentsForward)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      return MakeGradNode("_backward_moments", n, {og[0], og[1], n->inputs[0], NodeEntry{n, 0, 0}});
    });

TS_REGISTER_OP(_backward_moments)
    .describe("Gradient of moments: inputs dmean, dvar, data, mean; output ddata.")
    .set_num_inputs(4)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<MomentsParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& attrs, std::vector<Shape>* in,
                              std::vector<Shape>* out) {
                             std::vector<Shape> fin{(*in)[2]}, fout(2);
                             if (!MomentsShape(attrs, &fin, &fout)) return false;
                             for (size_t i : {size_t{0}, size_t{1}, size_t{3}})
                               AssignShape(attrs, in, i, fout[0], "input");
                             AssignShape(attrs, out, 0, fin[0], "gradient");
                             return true;
                           })
    .set_attr<FInferType>("FInferType", ElemwiseType<4, 1>)
    .set_attr<FCompute>(kFComputeCPU, MomentsBackward);

}  // namespace tessera::op
