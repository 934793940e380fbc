// contrib.BilinearResize2D (MXNet's): bilinear resizing of NCHW data, with
// MXNet's output-size modes and its source-index rule (align_corners: the
// corner pixels' centres meet, the default; else pixel areas scale, as
// OpenCV's resize).
#include <cmath>
#include <optional>
#include <vector>

#include "ops/nn/nn_common.h"
#include "ops/nn/softmax_output-inl.h"

namespace tessera::op {
namespace {

enum ResizeMode { kSize, kOddScale, kLike, kToEvenDown, kToEvenUp, kToOddDown, kToOddUp };

struct BilinearResizeParam : Params<BilinearResizeParam> {
  int height = 1, width = 1;
  std::optional<double> scale_height, scale_width;
  int mode = kSize;
  bool align_corners = true;
  static void Declare(ParamDecl<BilinearResizeParam>& d) {
    d.field("height", &BilinearResizeParam::height)
        .set_default(1)
        .set_lower_bound(1)
        .describe("Output height (mode 'size' without scale_height).");
    d.field("width", &BilinearResizeParam::width)
        .set_default(1)
        .set_lower_bound(1)
        .describe("Output width (mode 'size' without scale_width).");
    d.field("scale_height", &BilinearResizeParam::scale_height)
        .set_default(std::nullopt)
        .describe("Scale of the height (modes 'size' and 'odd_scale').");
    d.field("scale_width", &BilinearResizeParam::scale_width)
        .set_default(std::nullopt)
        .describe("Scale of the width (modes 'size' and 'odd_scale').");
    d.field("mode", &BilinearResizeParam::mode)
        .add_enum("size", kSize)
        .add_enum("odd_scale", kOddScale)
        .add_enum("like", kLike)
        .add_enum("to_even_down", kToEvenDown)
        .add_enum("to_even_up", kToEvenUp)
        .add_enum("to_odd_down", kToOddDown)
        .add_enum("to_odd_up", kToOddUp)
        .set_default(kSize)
        .describe(
            "size: height and width, or the input's times the scales; odd_scale: an odd size "
            "s gives (s - 1) * scale + 1, an even one s * scale; like: the second input's "
            "height and width; to_even_down / to_even_up / to_odd_down / to_odd_up: the "
            "nearest even (odd) size below (above) an odd (even) one.");
    d.field("align_corners", &BilinearResizeParam::align_corners)
        .set_default(true)
        .describe(
            "Source index dst * (in - 1) / (out - 1) (the corners' centres meet); else "
            "(dst + 0.5) * in / out - 0.5, at least 0.");
  }
};

uint32_t ResizeInputs(const NodeAttrs& attrs) {
  return ParamsOf<BilinearResizeParam>(attrs).mode == kLike ? 2 : 1;
}

// The output size along one axis of size s.
int64_t Resized(const BilinearResizeParam& p, int64_t s, int64_t fixed,
                const std::optional<double>& scale, int64_t like) {
  switch (p.mode) {
    case kSize:
      return scale ? int64_t(*scale * double(s)) : fixed;
    case kOddScale:
      return s % 2 == 0 ? int64_t(double(s) * scale.value_or(1))
                        : int64_t(double(s - 1) * scale.value_or(1)) + 1;
    case kLike:
      return like;
    case kToEvenDown:
      return s % 2 == 0 ? s : s - 1;
    case kToEvenUp:
      return s % 2 == 0 ? s : s + 1;
    case kToOddDown:
      return s % 2 == 1 ? s : s - 1;
    default:
      return s % 2 == 1 ? s : s + 1;
  }
}

bool ResizeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = ParamsOf<BilinearResizeParam>(attrs);
  const Shape& d = (*in)[0];
  if (!d.known() || (p.mode == kLike && !(*in)[1].known())) return false;
  TS_CHECK(d.ndim() == 4) << OpLabel(attrs) << ": data has shape " << d
                          << "; it must be NCHW (4 axes)";
  if (p.mode == kOddScale) {
    TS_CHECK(p.scale_height && p.scale_width)
        << OpLabel(attrs) << ": mode 'odd_scale' needs scale_height and scale_width";
  }
  int64_t lh = 0, lw = 0;
  if (p.mode == kLike) {
    const Shape& l = (*in)[1];
    TS_CHECK(l.ndim() == 4) << OpLabel(attrs) << ": like has shape " << l
                            << "; its last two axes are the size (4 axes)";
    lh = l[2];
    lw = l[3];
  }
  const int64_t oh = Resized(p, d[2], p.height, p.scale_height, lh);
  const int64_t ow = Resized(p, d[3], p.width, p.scale_width, lw);
  TS_CHECK(oh >= 1 && ow >= 1) << OpLabel(attrs) << ": the output size " << oh << "x" << ow
                               << " from data " << d << " is empty";
  AssignShape(attrs, out, 0, Shape{d[0], d[1], oh, ow}, "output");
  return true;
}

// Where output index o samples along an axis: the lower source index, its
// step to the upper one (0 at the edge) and the upper one's weight.
struct Tap {
  int64_t lo, step;
  double frac;
};

std::vector<Tap> Taps(int64_t in, int64_t out, bool align) {
  const double scale = out > 1 ? (align ? double(in - 1) / double(out - 1) : double(in) / out) : 0;
  std::vector<Tap> taps(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    double src = align ? scale * double(o) : scale * (double(o) + 0.5) - 0.5;
    if (src < 0) src = 0;
    const auto lo = int64_t(src);
    taps[size_t(o)] = {lo, lo < in - 1 ? 1 : 0, src - double(lo)};
  }
  return taps;
}

// kForward: x -> y; else dy -> dx (the adjoint, summed).
template <bool kForward>
void ResizeCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const bool align = ParamsOf<BilinearResizeParam>(attrs).align_corners;
  const Shape& small = kForward ? in[0].shape() : out[0].shape();  // the resized input
  const Shape& big = kForward ? out[0].shape() : in[0].shape();    // the output's shape
  const int64_t planes = small[0] * small[1], H = small[2], W = small[3], OH = big[2], OW = big[3];
  const std::vector<Tap> th = Taps(H, OH, align), tw = Taps(W, OW, align);
  ForFloatAndDouble(attrs, in[0].dtype(), OpLabel(attrs).c_str(), [&](auto zero) {
    using T = decltype(zero);
    const T* src = in[0].dptr<T>();
    T* dst = out[0].dptr<T>();
    if (req[0] != kNullOp) {
      const bool add = req[0] == kAddTo;
      if (!kForward && !add) std::fill(dst, dst + planes * H * W, T(0));
      [[maybe_unused]] const int threads = CpuThreads(ctx.run_ctx, planes * OH * OW);
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#endif
      for (int64_t p = 0; p < planes; ++p)
        for (int64_t i = 0; i < OH; ++i) {
          const Tap a = th[size_t(i)];
          for (int64_t j = 0; j < OW; ++j) {
            const Tap b = tw[size_t(j)];
            const int64_t base = (p * H + a.lo) * W + b.lo, o = (p * OH + i) * OW + j;
            const int64_t at[4] = {base, base + b.step, base + a.step * W,
                                   base + a.step * W + b.step};
            const double wt[4] = {(1 - a.frac) * (1 - b.frac), (1 - a.frac) * b.frac,
                                  a.frac * (1 - b.frac), a.frac * b.frac};
            if (kForward) {
              double v = 0;
              for (int k = 0; k < 4; ++k) v += wt[k] * double(src[at[k]]);
              dst[o] = T(add ? double(dst[o]) + v : v);
            } else {
              for (int k = 0; k < 4; ++k)
                dst[at[k]] = T(double(dst[at[k]]) + wt[k] * double(src[o]));
            }
          }
        }
    }
    if (!kForward && out.size() == 2) FillZeroReq<T>(out[1], req[1]);
  });
}

}  // namespace

TS_REGISTER_OP(_contrib_BilinearResize2D)
    .describe(R"(Bilinear resizing of NCHW data (MXNet's contrib.BilinearResize2D):
output (N, C, oh, ow) with the size from `mode` (default 'size': height and
width, or the input's size times scale_height / scale_width; 'like': the
second input's). Output pixel (i, j) interpolates the input at source
(i (H - 1) / (oh - 1), j (W - 1) / (ow - 1)) with align_corners (the
default), else at ((i + 0.5) H / oh - 0.5, ...), clamped at 0.)")
    .set_num_inputs(ResizeInputs)
    .set_attr_parser(ParamParser<BilinearResizeParam>)
    .add_alias("BilinearResize2D")
    .add_argument("data", "NDArray", "Input data, NCHW.")
    .add_argument("like", "NDArray", "With mode 'like': the array whose height and width to take.")
    .add_arguments(BilinearResizeParam::Fields())
    .set_attr<FListInputNames>("FListInputNames",
                               [](const NodeAttrs& attrs) {
                                 return ResizeInputs(attrs) == 2
                                            ? std::vector<std::string>{"data", "like"}
                                            : std::vector<std::string>{"data"};
                               })
    .set_attr<FInferShape>("FInferShape", ResizeShape)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, ResizeCompute<true>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      std::vector<NodeEntry> in{og[0]};
      in.insert(in.end(), n->inputs.begin(), n->inputs.end());
      return MakeGradNode("_backward_contrib_BilinearResize2D", n, in);
    });

TS_REGISTER_OP(_backward_contrib_BilinearResize2D)
    .describe(
        "Gradient of BilinearResize2D: inputs dOut, data[, like]; outputs d data[, d like "
        "(zeros)].")
    .set_num_inputs([](const NodeAttrs& attrs) { return ResizeInputs(attrs) + 1; })
    .set_num_outputs(ResizeInputs)
    .set_attr_parser(ParamParser<BilinearResizeParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& attrs, std::vector<Shape>* in,
                              std::vector<Shape>* out) {
                             std::vector<Shape> fin(in->begin() + 1, in->end()), fout(1);
                             if (!ResizeShape(attrs, &fin, &fout)) return false;
                             AssignShape(attrs, in, 0, fout[0], "output gradient");
                             for (size_t i = 0; i < fin.size(); ++i)
                               AssignShape(attrs, out, i, fin[i], "gradient");
                             return true;
                           })
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, ResizeCompute<false>);

}  // namespace tessera::op
