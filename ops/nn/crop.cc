// Crop (MXNet's legacy Crop): a window of every image of NCHW data, its size
// given (h_w) or taken from a second array's height and width, placed at an
// offset or centred. The gradient puts the output gradient back in the
// window, zeros elsewhere.
#include <vector>

#include "ops/nn/nn_common.h"
#include "ops/nn/softmax_output-inl.h"

namespace tessera::op {
namespace {

struct CropParam : Params<CropParam> {
  int num_args = 1;
  Shape offset = Shape{0, 0}, h_w = Shape{0, 0};
  bool center_crop = false;
  static void Declare(ParamDecl<CropParam>& d) {
    d.field("num_args", &CropParam::num_args)
        .set_range(1, 2)
        .describe("1: crop to h_w; 2: crop to the second input's height and width.");
    d.field("offset", &CropParam::offset)
        .set_default(Shape{0, 0})
        .describe("The window's top-left corner (y, x), unless center_crop.");
    d.field("h_w", &CropParam::h_w)
        .set_default(Shape{0, 0})
        .describe("The window's size (h, w), with num_args = 1.");
    d.field("center_crop", &CropParam::center_crop)
        .set_default(false)
        .describe("Centre the window (the offset is ignored).");
  }
};

// The window: its size and top-left corner in the (H, W) plane.
struct CropWindow {
  int64_t h = 0, w = 0, y = 0, x = 0;
};

CropWindow WindowOf(const NodeAttrs& attrs, const Shape& data, const Shape* like) {
  const auto& p = ParamsOf<CropParam>(attrs);
  TS_CHECK(data.ndim() == 4) << OpLabel(attrs) << ": data has shape " << data
                             << "; it must be NCHW (4 axes)";
  TS_CHECK(p.offset.ndim() == 2 && p.h_w.ndim() == 2)
      << OpLabel(attrs) << ": offset " << p.offset << " and h_w " << p.h_w
      << " must have 2 values (y, x) and (h, w)";
  CropWindow c;
  if (p.num_args == 2) {
    TS_CHECK(like->ndim() == 4) << OpLabel(attrs) << ": crop_like has shape " << *like
                                << "; it must have 4 axes (its last two are the size)";
    c.h = (*like)[2];
    c.w = (*like)[3];
  } else {
    c.h = p.h_w[0];
    c.w = p.h_w[1];
  }
  const int64_t H = data[2], W = data[3];
  TS_CHECK(c.h >= 1 && c.w >= 1 && c.h <= H && c.w <= W)
      << OpLabel(attrs) << ": the window " << c.h << "x" << c.w << " does not fit in the " << H
      << "x" << W << " images of " << data;
  c.y = p.center_crop ? (H - c.h) / 2 : p.offset[0];
  c.x = p.center_crop ? (W - c.w) / 2 : p.offset[1];
  TS_CHECK(c.y >= 0 && c.x >= 0 && c.y + c.h <= H && c.x + c.w <= W)
      << OpLabel(attrs) << ": offset " << p.offset << " puts the " << c.h << "x" << c.w
      << " window outside the " << H << "x" << W << " images";
  return c;
}

bool CropShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[0];
  if (!d.known() || (in->size() == 2 && !(*in)[1].known())) return false;
  const CropWindow c = WindowOf(attrs, d, in->size() == 2 ? &(*in)[1] : nullptr);
  AssignShape(attrs, out, 0, Shape{d[0], d[1], c.h, c.w}, "output");
  return true;
}

// Copies between the window of the images (N, C, H, W) and (N, C, h, w):
// out of the window (forward) or into it (backward, zeros elsewhere).
template <typename T>
void CopyWindow(const CropWindow& c, const Shape& big, const T* src, T* dst, bool into, bool add) {
  const int64_t planes = big[0] * big[1], H = big[2], W = big[3];
  if (into && !add) std::fill(dst, dst + planes * H * W, T(0));
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t r = 0; r < c.h; ++r) {
      const int64_t b = (p * H + c.y + r) * W + c.x, s = (p * c.h + r) * c.w;
      for (int64_t j = 0; j < c.w; ++j) {
        T& to = into ? dst[b + j] : dst[s + j];
        const T from = into ? src[s + j] : src[b + j];
        to = add ? static_cast<T>(to + from) : from;
      }
    }
}

void CropForward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const Shape like = in.size() == 2 ? in[1].shape() : Shape();
  const CropWindow c = WindowOf(attrs, in[0].shape(), in.size() == 2 ? &like : nullptr);
  ForFloatAndDouble(attrs, in[0].dtype(), "Crop", [&](auto zero) {
    using T = decltype(zero);
    CopyWindow(c, in[0].shape(), in[0].dptr<T>(), out[0].dptr<T>(), false, req[0] == kAddTo);
  });
}

// in: ograd, data[, crop_like]; out: d data[, d crop_like (zeros)].
void CropBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const Shape like = in.size() == 3 ? in[2].shape() : Shape();
  const CropWindow c = WindowOf(attrs, in[1].shape(), in.size() == 3 ? &like : nullptr);
  ForFloatAndDouble(attrs, in[0].dtype(), "_backward_Crop", [&](auto zero) {
    using T = decltype(zero);
    if (req[0] != kNullOp)
      CopyWindow(c, in[1].shape(), in[0].dptr<T>(), out[0].dptr<T>(), true, req[0] == kAddTo);
    if (out.size() == 2) FillZeroReq<T>(out[1], req[1]);
  });
}

uint32_t CropInputs(const NodeAttrs& attrs) {
  return uint32_t(ParamsOf<CropParam>(attrs).num_args);
}

}  // namespace

TS_REGISTER_OP(Crop)
    .describe(R"(Crops every image of NCHW data (MXNet's legacy Crop): to h_w with
num_args = 1, or to the height and width of a second input (crop_like) with
num_args = 2; the window's top-left corner is `offset` (y, x), or the window
is centred with center_crop. Output (N, C, h, w). The gradient of data is
the output gradient in the window, zeros elsewhere; crop_like gets none.)")
    .set_num_inputs(CropInputs)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<CropParam>)
    .set_key_var_num_args("num_args")
    .add_argument("data", "NDArray[]", "The images, then optionally crop_like.")
    .add_arguments(CropParam::Fields())
    .set_attr<FListInputNames>("FListInputNames",
                               [](const NodeAttrs& attrs) {
                                 return CropInputs(attrs) == 2
                                            ? std::vector<std::string>{"arg0", "arg1"}
                                            : std::vector<std::string>{"arg0"};
                               })
    .set_attr<FInferShape>("FInferShape", CropShape)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, CropForward)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      std::vector<NodeEntry> in{og[0]};
      in.insert(in.end(), n->inputs.begin(), n->inputs.end());
      return MakeGradNode("_backward_Crop", n, in);
    });

TS_REGISTER_OP(_backward_Crop)
    .describe("Gradient of Crop: inputs ograd, data[, crop_like]; outputs d data[, d crop_like].")
    .set_num_inputs([](const NodeAttrs& attrs) { return CropInputs(attrs) + 1; })
    .set_num_outputs(CropInputs)
    .set_attr_parser(ParamParser<CropParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& attrs, std::vector<Shape>* in,
                              std::vector<Shape>* out) {
                             std::vector<Shape> fin(in->begin() + 1, in->end()), fout(1);
                             if (!CropShape(attrs, &fin, &fout)) return false;
                             AssignShape(attrs, in, 0, fout[0], "output gradient");
                             for (size_t i = 0; i < fin.size(); ++i)
                               AssignShape(attrs, out, i, fin[i], "gradient");
                             return true;
                           })
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, CropBackward);

}  // namespace tessera::op
