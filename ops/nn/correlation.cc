// Correlation (MXNet's, FlowNet's correlation layer): for every position of
// the first image and every displacement within max_displacement, the mean
// over a kernel_size patch and the channels of data1 * data2 (or of
// |data1 - data2|), the data zero-padded by pad_size.
#include <cmath>
#include <vector>

#include "ops/nn/nn_common.h"

namespace tessera::op {
namespace {

struct CorrelationParam : Params<CorrelationParam> {
  int kernel_size = 1, max_displacement = 1, stride1 = 1, stride2 = 1, pad_size = 0;
  bool is_multiply = true;
  static void Declare(ParamDecl<CorrelationParam>& d) {
    d.field("kernel_size", &CorrelationParam::kernel_size)
        .set_default(1)
        .set_lower_bound(1)
        .describe("The patch compared (an odd size).");
    d.field("max_displacement", &CorrelationParam::max_displacement)
        .set_default(1)
        .set_lower_bound(0)
        .describe("The largest displacement compared, in pixels.");
    d.field("stride1", &CorrelationParam::stride1)
        .set_default(1)
        .set_lower_bound(1)
        .describe("The step between positions of the first image.");
    d.field("stride2", &CorrelationParam::stride2)
        .set_default(1)
        .set_lower_bound(1)
        .describe("The step between displacements.");
    d.field("pad_size", &CorrelationParam::pad_size)
        .set_default(0)
        .set_lower_bound(0)
        .describe("Zeros added around both images.");
    d.field("is_multiply", &CorrelationParam::is_multiply)
        .set_default(true)
        .describe("Multiply the two images (else take the absolute difference).");
  }
};

struct CorrGeom {
  int64_t n, c, h, w, radius, grid, top_c, top_h, top_w;
};

CorrGeom GeomOf(const NodeAttrs& attrs, const Shape& s) {
  const auto& p = ParamsOf<CorrelationParam>(attrs);
  TS_CHECK(s.ndim() == 4) << OpLabel(attrs) << ": data1 has shape " << s << "; it must be NCHW";
  const int64_t kr = (p.kernel_size - 1) / 2, border = p.max_displacement + kr;
  const int64_t ph = s[2] + 2 * p.pad_size, pw = s[3] + 2 * p.pad_size;
  TS_CHECK(ph - 2 * border >= 1 && pw - 2 * border >= 1)
      << OpLabel(attrs) << ": data " << s << " padded by " << p.pad_size
      << " is too small for max_displacement " << p.max_displacement << " and kernel_size "
      << p.kernel_size;
  CorrGeom g{s[0], s[1], s[2], s[3], p.max_displacement / p.stride2, 0, 0, 0, 0};
  g.grid = 2 * g.radius + 1;
  g.top_c = g.grid * g.grid;
  g.top_h = (ph - 2 * border + p.stride1 - 1) / p.stride1;
  g.top_w = (pw - 2 * border + p.stride1 - 1) / p.stride1;
  return g;
}

bool CorrelationShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known() && (*in)[1].known()) AssignShape(attrs, in, 0, (*in)[1], "data1");
  if (!(*in)[0].known()) return false;
  AssignShape(attrs, in, 1, (*in)[0], "data2");
  const CorrGeom g = GeomOf(attrs, (*in)[0]);
  AssignShape(attrs, out, 0, Shape{g.n, g.top_c, g.top_h, g.top_w}, "output");
  return true;
}

// fn(o, a, b) for every output o and every pair of compared elements: their
// offsets in data1 and data2 (-1 in the zero padding).
template <typename F>
void ForPairs(const CorrelationParam& p, const CorrGeom& g, F&& fn) {
  auto at = [&](int64_t b, int64_t ch, int64_t y, int64_t x) -> int64_t {
    y -= p.pad_size;
    x -= p.pad_size;
    if (y < 0 || y >= g.h || x < 0 || x >= g.w) return -1;
    return ((b * g.c + ch) * g.h + y) * g.w + x;
  };
  for (int64_t b = 0; b < g.n; ++b)
    for (int64_t tc = 0; tc < g.top_c; ++tc)
      for (int64_t i = 0; i < g.top_h; ++i)
        for (int64_t j = 0; j < g.top_w; ++j) {
          const int64_t o = ((b * g.top_c + tc) * g.top_h + i) * g.top_w + j;
          const int64_t x1 = j * p.stride1 + p.max_displacement,
                        y1 = i * p.stride1 + p.max_displacement;
          const int64_t x2 = x1 + (tc % g.grid - g.radius) * p.stride2;
          const int64_t y2 = y1 + (tc / g.grid - g.radius) * p.stride2;
          for (int64_t hh = 0; hh < p.kernel_size; ++hh)
            for (int64_t ww = 0; ww < p.kernel_size; ++ww)
              for (int64_t ch = 0; ch < g.c; ++ch)
                fn(o, at(b, ch, y1 + hh, x1 + ww), at(b, ch, y2 + hh, x2 + ww));
        }
}

void CorrelationForward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                        const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<CorrelationParam>(attrs);
  const CorrGeom g = GeomOf(attrs, in[0].shape());
  const double count = double(p.kernel_size * p.kernel_size * g.c);
  ForFloatAndDouble(attrs, in[0].dtype(), "Correlation", [&](auto zero) {
    using T = decltype(zero);
    const T* d1 = in[0].dptr<T>();
    const T* d2 = in[1].dptr<T>();
    std::vector<double> acc(size_t(out[0].Size()), 0.0);
    ForPairs(p, g, [&](int64_t o, int64_t a, int64_t b) {
      const double v1 = a < 0 ? 0 : double(d1[a]), v2 = b < 0 ? 0 : double(d2[b]);
      acc[size_t(o)] += p.is_multiply ? v1 * v2 : std::fabs(v1 - v2);
    });
    T* y = out[0].dptr<T>();
    for (size_t i = 0; i < acc.size(); ++i)
      y[i] = req[0] == kAddTo ? T(double(y[i]) + acc[i] / count) : T(acc[i] / count);
  });
}

// in: dOut, data1, data2; out: d data1, d data2.
void CorrelationBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<CorrelationParam>(attrs);
  const CorrGeom g = GeomOf(attrs, in[1].shape());
  const double count = double(p.kernel_size * p.kernel_size * g.c);
  ForFloatAndDouble(attrs, in[0].dtype(), "_backward_Correlation", [&](auto zero) {
    using T = decltype(zero);
    const T* go = in[0].dptr<T>();
    const T* d1 = in[1].dptr<T>();
    const T* d2 = in[2].dptr<T>();
    std::vector<double> g1(size_t(in[1].Size()), 0.0), g2(size_t(in[2].Size()), 0.0);
    ForPairs(p, g, [&](int64_t o, int64_t a, int64_t b) {
      const double v1 = a < 0 ? 0 : double(d1[a]), v2 = b < 0 ? 0 : double(d2[b]);
      const double s = double(go[o]) / count;
      const double da = p.is_multiply ? v2 : (v1 >= v2 ? 1.0 : -1.0);
      const double db = p.is_multiply ? v1 : (v1 >= v2 ? -1.0 : 1.0);
      if (a >= 0) g1[size_t(a)] += s * da;
      if (b >= 0) g2[size_t(b)] += s * db;
    });
    const std::vector<double>* grads[2] = {&g1, &g2};
    for (size_t k = 0; k < 2; ++k) {
      if (req[k] == kNullOp) continue;
      T* dst = out[k].dptr<T>();
      for (size_t i = 0; i < grads[k]->size(); ++i)
        dst[i] = req[k] == kAddTo ? T(double(dst[i]) + (*grads[k])[i]) : T((*grads[k])[i]);
    }
  });
}

}  // namespace

TS_REGISTER_OP(Correlation)
    .describe(R"(The correlation of two images (MXNet's Correlation, from FlowNet):
for every position (i, j) of the first image (stride1 apart, max_displacement
in from the padded border) and every displacement (dx, dy) in [-D, D]^2
(stride2 apart, D = max_displacement), the mean over a kernel_size patch and
the channels of data1 * data2 at the displaced position (or |data1 - data2|
without is_multiply); both images zero-padded by pad_size. Output (N,
(2 D / stride2 + 1)^2, H', W').)")
    .set_num_inputs(2)
    .set_attr_parser(ParamParser<CorrelationParam>)
    .add_argument("data1", "NDArray", "The first images, NCHW.")
    .add_argument("data2", "NDArray", "The second images, the same shape.")
    .add_arguments(CorrelationParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data1", "data2"}))
    .set_attr<FInferShape>("FInferShape", CorrelationShape)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, CorrelationForward)
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_Correlation"});

TS_REGISTER_OP(_backward_Correlation)
    .describe("Gradient of Correlation: inputs dOut, data1, data2; outputs d data1, d data2.")
    .set_num_inputs(3)
    .set_num_outputs(2)
    .set_attr_parser(ParamParser<CorrelationParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& attrs, std::vector<Shape>* in,
                              std::vector<Shape>* out) {
                             std::vector<Shape> fin{(*in)[1], (*in)[2]}, fout(1);
                             if (!CorrelationShape(attrs, &fin, &fout)) return false;
                             AssignShape(attrs, in, 0, fout[0], "output gradient");
                             AssignShape(attrs, out, 0, fin[0], "gradient of data1");
                             AssignShape(attrs, out, 1, fin[1], "gradient of data2");
                             return true;
                           })
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, CorrelationBackward);

}  // namespace tessera::op
