// moments (MXNet's) on the CPU: each output's two passes on one thread,
// the outputs shared among the op's threads; and the registration.
#include <vector>

#include "engine/op/node.h"
#include "ops/tensor/moments_op-inl.h"

namespace tessera::op {

namespace {

// fn(o, base) for every output o, the outputs shared among the op's
// threads; element r of its reduction is at base + plan.RedOffset(r).
template <typename F>
void ForEachOutput(const OpContext& ctx, const ReducePlan& plan, F&& fn) {
  [[maybe_unused]] const int threads = CpuThreads(ctx.run_ctx, plan.out_size * plan.red_size);
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#endif
  for (int64_t o = 0; o < plan.out_size; ++o) fn(o, plan.OutBase(o));
}

}  // namespace

template <>
struct MomentsKernels<cpu> {
  template <typename T>
  static void Forward(const OpContext& ctx, const ReducePlan& plan, const T* x, T* mean,
                      OpReqType rm, T* var, OpReqType rv) {
    const double n = double(plan.red_size);
    ForEachOutput(ctx, plan, [&](int64_t o, int64_t base) {
      double s = 0, ss = 0;
      for (int64_t r = 0; r < plan.red_size; ++r) s += double(x[base + plan.RedOffset(r)]);
      const double m = s / n;
      for (int64_t r = 0; r < plan.red_size; ++r) {
        const double d = double(x[base + plan.RedOffset(r)]) - m;
        ss += d * d;
      }
      AssignFromDouble(mean[o], m, rm);
      AssignFromDouble(var[o], ss / n, rv);
    });
  }
  template <typename T>
  static void Backward(const OpContext& ctx, const ReducePlan& plan, const T* dm, const T* dv,
                       const T* x, const T* mean, T* dx, OpReqType req) {
    ForEachOutput(ctx, plan, [&](int64_t o, int64_t base) {
      for (int64_t r = 0; r < plan.red_size; ++r)
        MomentsGradElem::Map(o, base + plan.RedOffset(r), plan, dm, dv, x, mean, dx, req);
    });
  }
};

namespace {

bool MomentsShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& s = (*in)[0];
  if (!s.known()) return false;
  const Shape r = ReducedShape(s, MomentsMask(attrs, s), ParamsOf<MomentsParam>(attrs).keepdims);
  AssignShape(attrs, out, 0, r, "mean");
  AssignShape(attrs, out, 1, r, "var");
  return true;
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
    .set_attr<FCompute>(kFComputeCPU, MomentsForward<cpu>)
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
    .set_attr<FCompute>(kFComputeCPU, MomentsBackward<cpu>);

}  // namespace tessera::op
