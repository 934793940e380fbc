// contrib.BilinearResize2D (MXNet's): bilinear resizing of NCHW data, with
// MXNet's output-size modes and its source-index rule (align_corners: the
// corner pixels' centres meet, the default; else pixel areas scale, as
// OpenCV's resize). Shapes and registration; kernels in
// bilinear_resize-inl.h.
#include <optional>
#include <vector>

#include "ops/nn/bilinear_resize-inl.h"

namespace tessera::op {
namespace {

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
    .set_attr<FCompute>(kFComputeCPU, ResizeCompute<cpu, true>)
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
    .set_attr<FCompute>(kFComputeCPU, ResizeCompute<cpu, false>);

}  // namespace tessera::op
