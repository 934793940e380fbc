// contrib.AdaptiveAvgPooling2D (MXNet's): average pooling of NCHW data to a
// fixed output size, bin (i, j) covering rows floor(i H / oh) to
// ceil((i + 1) H / oh) and the columns likewise.
#include <cmath>
#include <vector>

#include "ops/nn/nn_common.h"

namespace tessera::op {
namespace {

struct AdaptivePoolParam : Params<AdaptivePoolParam> {
  Shape output_size;
  static void Declare(ParamDecl<AdaptivePoolParam>& d) {
    d.field("output_size", &AdaptivePoolParam::output_size)
        .set_default(Shape())
        .describe("The output's (height, width), or one size for both; empty: (1, 1).");
  }
};

// The output's (oh, ow).
std::pair<int64_t, int64_t> OutputSize(const NodeAttrs& attrs) {
  const Shape& s = ParamsOf<AdaptivePoolParam>(attrs).output_size;
  TS_CHECK(s.ndim() <= 2) << OpLabel(attrs) << ": output_size " << s << " must have 1 or 2 values";
  for (int i = 0; i < s.ndim(); ++i)
    TS_CHECK(s[i] >= 1) << OpLabel(attrs) << ": output_size " << s << " must be positive";
  if (s.ndim() == 0) return {1, 1};
  return s.ndim() == 1 ? std::make_pair(s[0], s[0]) : std::make_pair(s[0], s[1]);
}

bool AdaptiveShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[0];
  if (!d.known()) return false;
  TS_CHECK(d.ndim() == 4) << OpLabel(attrs) << ": data has shape " << d
                          << "; it must be NCHW (4 axes)";
  const auto [oh, ow] = OutputSize(attrs);
  AssignShape(attrs, out, 0, Shape{d[0], d[1], oh, ow}, "output");
  return true;
}

// Rows [Start(i), End(i)) of bin i of n over size s.
int64_t BinStart(int64_t i, int64_t n, int64_t s) {
  return int64_t(std::floor(double(i * s) / double(n)));
}
int64_t BinEnd(int64_t i, int64_t n, int64_t s) {
  return int64_t(std::ceil(double((i + 1) * s) / double(n)));
}

// kForward: x (N, C, H, W) -> y (N, C, oh, ow) averages; else dy -> dx,
// each bin's gradient spread evenly over it.
template <bool kForward>
void AdaptiveCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const Shape& big = kForward ? in[0].shape() : out[0].shape();
  const auto [oh, ow] = OutputSize(attrs);
  const int64_t planes = big[0] * big[1], H = big[2], W = big[3];
  ForFloatAndDouble(attrs, in[0].dtype(), OpLabel(attrs).c_str(), [&](auto zero) {
    using T = decltype(zero);
    const T* src = in[0].dptr<T>();
    T* dst = out[0].dptr<T>();
    const bool add = req[0] == kAddTo;
    if (!kForward && !add) std::fill(dst, dst + planes * H * W, T(0));
    [[maybe_unused]] const int threads = CpuThreads(ctx.run_ctx, planes * H * W);
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#endif
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          const int64_t h0 = BinStart(i, oh, H), h1 = BinEnd(i, oh, H);
          const int64_t w0 = BinStart(j, ow, W), w1 = BinEnd(j, ow, W);
          const double inv = 1.0 / double((h1 - h0) * (w1 - w0));
          const int64_t o = (p * oh + i) * ow + j;
          if (kForward) {
            double s = 0;
            for (int64_t h = h0; h < h1; ++h)
              for (int64_t w = w0; w < w1; ++w) s += double(src[(p * H + h) * W + w]);
            dst[o] = T(add ? double(dst[o]) + s * inv : s * inv);
          } else {
            const double g = double(src[o]) * inv;
            for (int64_t h = h0; h < h1; ++h)
              for (int64_t w = w0; w < w1; ++w) dst[(p * H + h) * W + w] += T(g);
          }
        }
  });
}

}  // namespace

TS_REGISTER_OP(_contrib_AdaptiveAvgPooling2D)
    .describe(R"(Average pooling of NCHW data to a fixed output size (MXNet's
contrib.AdaptiveAvgPooling2D): output (N, C, oh, ow), bin (i, j) the average
of rows floor(i H / oh) to ceil((i + 1) H / oh) - 1 and the columns likewise
(bins overlap where the sizes do not divide). output_size is (oh, ow), one
size for both, or empty for (1, 1).)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<AdaptivePoolParam>)
    .add_alias("AdaptiveAvgPooling2D")
    .add_argument("data", "NDArray", "Input data, NCHW.")
    .add_arguments(AdaptivePoolParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataInputName)
    .set_attr<FInferShape>("FInferShape", AdaptiveShape)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, AdaptiveCompute<true>)
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_contrib_AdaptiveAvgPooling2D"});

TS_REGISTER_OP(_backward_contrib_AdaptiveAvgPooling2D)
    .describe("Gradient of AdaptiveAvgPooling2D: inputs dOut, data; output d data.")
    .set_num_inputs(2)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<AdaptivePoolParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& attrs, std::vector<Shape>* in,
                              std::vector<Shape>* out) {
                             std::vector<Shape> fin{(*in)[1]}, fout{(*in)[0]};
                             if (!AdaptiveShape(attrs, &fin, &fout)) return false;
                             AssignShape(attrs, in, 0, fout[0], "output gradient");
                             AssignShape(attrs, out, 0, fin[0], "gradient");
                             return true;
                           })
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, AdaptiveCompute<false>);

}  // namespace tessera::op
