// L2Normalization (MXNet's): data divided by its L2 norm over an instance,
// the channels at each position, or each channel's positions; the norms are
// a hidden second output that the gradient reads.
#include <cmath>
#include <vector>

#include "ops/nn/nn_common.h"

namespace tessera::op {
namespace {

enum L2Mode { kInstance, kChannel, kSpatial };

struct L2NormalizationParam : Params<L2NormalizationParam> {
  float eps = 1e-10f;
  int mode = kInstance;
  static void Declare(ParamDecl<L2NormalizationParam>& d) {
    d.field("eps", &L2NormalizationParam::eps)
        .set_default(1e-10f)
        .describe("Added to the sum of squares inside the square root.");
    d.field("mode", &L2NormalizationParam::mode)
        .add_enum("instance", kInstance)
        .add_enum("channel", kChannel)
        .add_enum("spatial", kSpatial)
        .set_default(kInstance)
        .describe(
            "instance: over all axes but the first; channel: over axis 1 at each position; "
            "spatial: over the axes after 1, for each channel.");
  }
};

// The data as (outer, red, inner): the norm of (o, i) sums over red.
struct L2Geom {
  int64_t outer = 1, red = 1, inner = 1;
};

L2Geom GeomOf(const NodeAttrs& attrs, const Shape& s) {
  const int mode = ParamsOf<L2NormalizationParam>(attrs).mode;
  TS_CHECK(s.ndim() >= (mode == kInstance ? 2 : 3))
      << OpLabel(attrs) << ": data has shape " << s << "; mode "
      << (mode == kInstance ? "instance needs 2" : "channel and spatial need 3") << " or more axes";
  if (mode == kInstance) return {s[0], s.ProdRange(1, s.ndim()), 1};
  if (mode == kChannel) return {s[0], s[1], s.ProdRange(2, s.ndim())};
  return {s[0] * s[1], s.ProdRange(2, s.ndim()), 1};
}

Shape NormShape(const NodeAttrs& attrs, const Shape& s) {
  const int mode = ParamsOf<L2NormalizationParam>(attrs).mode;
  if (mode == kInstance) return Shape{s[0]};
  if (mode == kSpatial) return Shape{s[0], s[1]};
  Shape n = s;
  n[1] = 1;
  return n;
}

bool L2Shape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& s = (*in)[0];
  if (!s.known()) return false;
  GeomOf(attrs, s);
  AssignShape(attrs, out, 0, s, "output");
  AssignShape(attrs, out, 1, NormShape(attrs, s), "norm");
  return true;
}

// in: data; out: y = x / norm, norm = sqrt(sum x^2 + eps).
void L2Forward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
               const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const L2Geom g = GeomOf(attrs, in[0].shape());
  const double eps = ParamsOf<L2NormalizationParam>(attrs).eps;
  ForFloatAndDouble(attrs, in[0].dtype(), "L2Normalization", [&](auto zero) {
    using T = decltype(zero);
    const T* x = in[0].dptr<T>();
    T* y = out[0].dptr<T>();
    T* norm = out[1].dptr<T>();
    [[maybe_unused]] const int threads = CpuThreads(ctx.run_ctx, in[0].Size());
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#endif
    for (int64_t k = 0; k < g.outer * g.inner; ++k) {
      const int64_t o = k / g.inner, i = k % g.inner, base = o * g.red * g.inner + i;
      double ss = 0;
      for (int64_t r = 0; r < g.red; ++r)
        ss += double(x[base + r * g.inner]) * x[base + r * g.inner];
      const double nrm = std::sqrt(ss + eps);
      if (req[1] != kNullOp) norm[k] = T(req[1] == kAddTo ? norm[k] + nrm : nrm);
      if (req[0] == kNullOp) continue;
      for (int64_t r = 0; r < g.red; ++r) {
        const int64_t at = base + r * g.inner;
        const double v = x[at] / nrm;
        y[at] = T(req[0] == kAddTo ? y[at] + v : v);
      }
    }
  });
}

// in: dy, y, norm; dx = (dy - y sum(dy y)) / norm, the sum as the norm's.
void L2Backward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const L2Geom g = GeomOf(attrs, in[1].shape());
  ForFloatAndDouble(attrs, in[0].dtype(), "_backward_L2Normalization", [&](auto zero) {
    using T = decltype(zero);
    const T* dy = in[0].dptr<T>();
    const T* y = in[1].dptr<T>();
    const T* norm = in[2].dptr<T>();
    T* dx = out[0].dptr<T>();
    [[maybe_unused]] const int threads = CpuThreads(ctx.run_ctx, in[0].Size());
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#endif
    for (int64_t k = 0; k < g.outer * g.inner; ++k) {
      const int64_t o = k / g.inner, i = k % g.inner, base = o * g.red * g.inner + i;
      double dot = 0;
      for (int64_t r = 0; r < g.red; ++r)
        dot += double(dy[base + r * g.inner]) * y[base + r * g.inner];
      for (int64_t r = 0; r < g.red; ++r) {
        const int64_t at = base + r * g.inner;
        const double v = (dy[at] - y[at] * dot) / norm[k];
        dx[at] = T(req[0] == kAddTo ? dx[at] + v : v);
      }
    }
  });
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
    .set_attr<FCompute>(kFComputeCPU, L2Forward)
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
    .set_attr<FCompute>(kFComputeCPU, L2Backward);

}  // namespace tessera::op
