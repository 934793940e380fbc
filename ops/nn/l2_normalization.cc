// L2Normalization (MXNet's): data divided by its L2 norm over an instance,
// the channels at each position, or each channel's positions; the norms are
// a hidden second output that the gradient reads.
#include <cmath>
#include <vector>

#include "ops/nn/l2_normalization-inl.h"

namespace tessera::op {

namespace {

// fn(k) for each row (a norm), rows shared among the OpenMP threads.
template <typename Fn>
void ForEachRow(const OpContext& ctx, const L2Geom& g, Fn&& fn) {
  [[maybe_unused]] const int threads = CpuThreads(ctx.run_ctx, g.rows() * g.red);
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#endif
  for (int64_t k = 0; k < g.rows(); ++k) fn(k);
}

// The sum over row k of a * b, in double.
template <typename T>
double RowDot(const L2Geom& g, int64_t k, const T* a, const T* b) {
  double s = 0;
  for (int64_t r = 0; r < g.red; ++r) s += double(a[g.index(k, r)]) * b[g.index(k, r)];
  return s;
}

}  // namespace

template <>
struct L2Kernels<cpu> {
  template <typename T>
  static void Forward(const OpContext& ctx, const L2Geom& g, const T* x, double eps, T* y,
                      OpReqType ry, T* norm, OpReqType rn) {
    ForEachRow(ctx, g, [&](int64_t k) {
      const double nrm = std::sqrt(RowDot(g, k, x, x) + eps);
      if (rn != kNullOp) norm[k] = T(rn == kAddTo ? norm[k] + nrm : nrm);
      if (ry == kNullOp) return;
      for (int64_t r = 0; r < g.red; ++r) {
        const int64_t at = g.index(k, r);
        const double v = x[at] / nrm;
        y[at] = T(ry == kAddTo ? y[at] + v : v);
      }
    });
  }
  template <typename T>
  static void Backward(const OpContext& ctx, const L2Geom& g, const T* dy, const T* y,
                       const T* norm, T* dx, OpReqType rx) {
    ForEachRow(ctx, g, [&](int64_t k) {
      const double dot = RowDot(g, k, dy, y);
      for (int64_t r = 0; r < g.red; ++r) {
        const int64_t at = g.index(k, r);
        const double v = (dy[at] - y[at] * dot) / norm[k];
        dx[at] = T(rx == kAddTo ? dx[at] + v : v);
      }
    });
  }
};

namespace {

Shape NormShape(const NodeAttrs& attrs, const Shape& s) {
  const int mode = ParamsOf<L2NormalizationParam>(attrs).mode;
  if (mode == kL2Instance) return Shape{s[0]};
  if (mode == kL2Spatial) return Shape{s[0], s[1]};
  Shape n = s;
  n[1] = 1;
  return n;
}

bool L2Shape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& s = (*in)[0];
  if (!s.known()) return false;
  L2GeomOf(attrs, s);
  AssignShape(attrs, out, 0, s, "output");
  AssignShape(attrs, out, 1, NormShape(attrs, s), "norm");
  return true;
}

}  // namespace

TS_REGISTER_OP(L2Normalization)
    .describe(R"(Divides data by its L2 norm, sqrt(sum(x^2) + eps) (MXNet's
L2Normalization): over each instance (all axes but the first; mode
'instance', the default), over the channels (axis 1) at each position
('channel'), or over each channel's positions (the axes after 1; 'spatial').
The norms are a hidden second output.

Example: x = [[[1, 2], [3, 4]], [[2, 2], [5, 6]]]: instance mode gives
[[[0.18257, 0.36515], [0.54772, 0.73030]], [[0.24077, 0.24077], [0.60193,
0.72232]]].)")
    .set_num_inputs(1)
    .set_num_outputs(2)
    .set_attr_parser(ParamParser<L2NormalizationParam>)
    .add_argument("data", "NDArray", "Input array to normalize.")
    .add_arguments(L2NormalizationParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataInputName)
    .set_attr<FListOutputNames>("FListOutputNames",
                                [](const NodeAttrs&) {
                                  return std::vector<std::string>{"output", "norm"};
                                })
    .set_attr<FNumVisibleOutputs>("FNumVisibleOutputs", [](const NodeAttrs&) { return 1u; })
    .set_attr<FInferShape>("FInferShape", L2Shape)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, L2Forward<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      return MakeGradNode("_backward_L2Normalization", n,
                          {og[0], NodeEntry{n, 0, 0}, NodeEntry{n, 1, 0}});
    });

TS_REGISTER_OP(_backward_L2Normalization)
    .describe("Gradient of L2Normalization: inputs dy, y, norm; output dx.")
    .set_num_inputs(3)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<L2NormalizationParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& attrs, std::vector<Shape>* in,
                              std::vector<Shape>* out) {
                             std::vector<Shape> fin{(*in)[1]}, fout(2);
                             if (!L2Shape(attrs, &fin, &fout)) return false;
                             AssignShape(attrs, in, 0, fout[0], "output gradient");
                             AssignShape(attrs, in, 2, fout[1], "norm");
                             AssignShape(attrs, out, 0, fout[0], "gradient");
                             return true;
                           })
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, L2Backward<cpu>);

}  // namespace tessera::op
