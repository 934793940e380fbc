// im2col and col2im (MXNet's): the patches of a convolution laid out as
// columns, (N, C * prod(kernel), L) for L output positions, and back, the
// overlapping patches summed. Each is the other's gradient. 1-D to 3-D.
#include <vector>

#include "ops/nn/im2col.h"
#include "ops/nn/nn_common.h"
#include "ops/nn/spatial_params.h"

namespace tessera::op {
namespace {

template <typename P>
void DeclarePatchFields(ParamDecl<P>& d) {
  d.field("kernel", &P::kernel).describe("The patch size: (w,), (h, w) or (d, h, w).");
  d.field("stride", &P::stride)
      .set_default(Shape())
      .describe("The step between patches, per spatial axis. Default 1 each.");
  d.field("dilate", &P::dilate)
      .set_default(Shape())
      .describe("The spacing of a patch's elements, per spatial axis. Default 1 each.");
  d.field("pad", &P::pad)
      .set_default(Shape())
      .describe("Zeros added on both sides, per spatial axis. Default 0 each.");
}

struct Im2ColParam : Params<Im2ColParam> {
  Shape kernel, stride, dilate, pad;
  static void Declare(ParamDecl<Im2ColParam>& d) { DeclarePatchFields(d); }
};

struct Col2ImParam : Params<Col2ImParam> {
  Shape kernel, stride, dilate, pad, output_size;
  static void Declare(ParamDecl<Col2ImParam>& d) {
    DeclarePatchFields(d);
    d.field("output_size", &Col2ImParam::output_size)
        .describe("The image's spatial size, with kernel's number of axes.");
  }
};

// The convolution geometry of the image (N, C, spatial...) under the
// patch parameters; errors name the op, the parameter and the shape.
template <typename P>
ConvGeom GeomOf(const NodeAttrs& attrs, const Shape& image) {
  const P& p = ParamsOf<P>(attrs);
  const int sp = p.kernel.ndim();
  TS_CHECK(sp >= 1 && sp <= 3) << OpLabel(attrs) << ": kernel " << p.kernel
                               << " must have 1 to 3 values";
  TS_CHECK(image.ndim() == sp + 2)
      << OpLabel(attrs) << ": the image " << image << " needs " << sp + 2
      << " axes (batch, channel, then kernel's " << sp << ")";
  ConvGeom g;
  g.spatial = sp;
  g.n = image[0];
  g.c = image[1];
  g.f = g.c;
  g.d = sp == 3 ? image[2] : 1;
  g.h = sp >= 2 ? image[sp] : 1;
  g.w = image[sp + 1];
  SpatialTuple3(attrs, "kernel", p.kernel, sp, 1, 1, image, &g.kd, &g.kh, &g.kw);
  SpatialTuple3(attrs, "stride", p.stride, sp, 1, 1, image, &g.sd, &g.sh, &g.sw);
  SpatialTuple3(attrs, "dilate", p.dilate, sp, 1, 1, image, &g.dd, &g.dh, &g.dw);
  SpatialTuple3(attrs, "pad", p.pad, sp, 0, 0, image, &g.pd, &g.ph, &g.pw);
  auto out = [&](int64_t in, int64_t k, int64_t s, int64_t d, int64_t pad) {
    const int64_t span = d * (k - 1) + 1;
    TS_CHECK(in + 2 * pad >= span) << OpLabel(attrs) << ": the kernel " << p.kernel
                                   << " (dilated) exceeds the padded image " << image;
    return (in + 2 * pad - span) / s + 1;
  };
  g.od = out(g.d, g.kd, g.sd, g.dd, g.pd);
  g.oh = out(g.h, g.kh, g.sh, g.dh, g.ph);
  g.ow = out(g.w, g.kw, g.sw, g.dw, g.pw);
  return g;
}

// (N, C * prod(kernel), L).
Shape ColumnsOf(const ConvGeom& g) {
  return Shape{g.n, g.c * g.ksize(), g.out_size()};
}

// col2im's image: (N, C, output_size...), C from the columns' rows.
Shape ImageOf(const NodeAttrs& attrs, const Shape& col) {
  const auto& p = ParamsOf<Col2ImParam>(attrs);
  TS_CHECK(col.ndim() == 3) << OpLabel(attrs) << ": data has shape " << col
                            << "; it must be (N, C * prod(kernel), L)";
  TS_CHECK(p.output_size.ndim() == p.kernel.ndim())
      << OpLabel(attrs) << ": output_size " << p.output_size << " and kernel " << p.kernel
      << " must have the same number of values";
  const int64_t k = p.kernel.Size();
  TS_CHECK(k > 0 && col[1] % k == 0) << OpLabel(attrs) << ": data " << col << " has " << col[1]
                                     << " rows, not a multiple of prod(kernel) = " << k;
  std::vector<int64_t> dims{col[0], col[1] / k};
  dims.insert(dims.end(), p.output_size.begin(), p.output_size.end());
  const Shape image(dims);
  const ConvGeom g = GeomOf<Col2ImParam>(attrs, image);
  TS_CHECK(ColumnsOf(g) == col) << OpLabel(attrs) << ": data has shape " << col << " but an image "
                                << image << " has " << ColumnsOf(g) << " columns";
  return image;
}

bool Im2ColShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known()) return false;
  AssignShape(attrs, out, 0, ColumnsOf(GeomOf<Im2ColParam>(attrs, (*in)[0])), "output");
  return true;
}

bool Col2ImShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known()) return false;
  AssignShape(attrs, out, 0, ImageOf(attrs, (*in)[0]), "output");
  return true;
}

// The columns of every image, written under `req`.
template <typename T>
void ImagesToColumns(const ConvGeom& g, const T* img, T* col, OpReqType req) {
  const int64_t isz = g.c * g.in_size(), csz = g.c * g.ksize() * g.out_size();
  std::vector<T> scratch(req == kAddTo ? size_t(csz) : 0);
  for (int64_t n = 0; n < g.n; ++n) {
    T* dst = req == kAddTo ? scratch.data() : col + n * csz;
    Im2Col(g, img + n * isz, dst);
    if (req == kAddTo)
      for (int64_t i = 0; i < csz; ++i) col[n * csz + i] += scratch[size_t(i)];
  }
}

// Every image's columns summed back into it, under `req`.
template <typename T>
void ColumnsToImages(const ConvGeom& g, const T* col, T* img, OpReqType req) {
  const int64_t isz = g.c * g.in_size(), csz = g.c * g.ksize() * g.out_size();
  if (req != kAddTo) std::fill(img, img + g.n * isz, T(0));
  for (int64_t n = 0; n < g.n; ++n) Col2Im(g, col + n * csz, img + n * isz);
}

// kToColumns: image -> columns (im2col, col2im's backward), else back.
// kImageInput: the image shape is input `kImageInput`'s, else col2im's.
template <typename P, bool kToColumns, int kImageInput>
void PatchCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const Shape image = kImageInput >= 0 ? in[kImageInput].shape() : ImageOf(attrs, in[0].shape());
  const ConvGeom g = GeomOf<P>(attrs, image);
  ForFloatAndDouble(attrs, in[0].dtype(), OpLabel(attrs).c_str(), [&](auto zero) {
    using T = decltype(zero);
    if (kToColumns)
      ImagesToColumns(g, in[0].dptr<T>(), out[0].dptr<T>(), req[0]);
    else
      ColumnsToImages(g, in[0].dptr<T>(), out[0].dptr<T>(), req[0]);
  });
}

// The backward ops: inputs (ograd, the forward input), the gradient shaped
// as the forward input and ograd as the forward output.
template <bool (*kForward)(const NodeAttrs&, std::vector<Shape>*, std::vector<Shape>*)>
bool PatchBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  std::vector<Shape> fin{(*in)[1]}, fout{(*in)[0]};
  if (!kForward(attrs, &fin, &fout)) return false;
  AssignShape(attrs, in, 0, fout[0], "output gradient");
  AssignShape(attrs, out, 0, fin[0], "gradient");
  return true;
}

}  // namespace

TS_REGISTER_OP(im2col)
    .describe(R"(The patches of a convolution as columns (MXNet's im2col): data (N, C,
spatial...) gives (N, C * prod(kernel), L), L the number of output positions
(o_i = (in_i + 2 pad_i - dilate_i (kernel_i - 1) - 1) / stride_i + 1); row
c * prod(kernel) + (offset in the kernel, row-major) of column l holds the
element that the kernel's offset covers at output position l (0 in the
padding). A convolution is a GEMM of the weight (F, C * prod(kernel)) and
these columns. Its gradient is col2im. float32 and float64.)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<Im2ColParam>)
    .add_argument("data", "NDArray", "Images, (N, C, [[d,] h,] w).")
    .add_arguments(Im2ColParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataInputName)
    .set_attr<FInferShape>("FInferShape", Im2ColShape)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, PatchCompute<Im2ColParam, true, 0>)
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_im2col"});

TS_REGISTER_OP(_backward_im2col)
    .describe(
        "Gradient of im2col: col2im of the output gradient (input 0), shaped as the data "
        "(input 1).")
    .set_num_inputs(2)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<Im2ColParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", PatchBackwardShape<Im2ColShape>)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, PatchCompute<Im2ColParam, false, 1>);

TS_REGISTER_OP(col2im)
    .describe(R"(Columns of patches back into images (MXNet's col2im), the
overlapping patches summed: data (N, C * prod(kernel), L) gives (N, C,
output_size...), L being the number of output positions im2col gives for that
image. col2im(im2col(x)) is x times the number of patches covering each
element. Its gradient is im2col. float32 and float64.)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<Col2ImParam>)
    .add_argument("data", "NDArray", "Columns, (N, C * prod(kernel), L).")
    .add_arguments(Col2ImParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataInputName)
    .set_attr<FInferShape>("FInferShape", Col2ImShape)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, PatchCompute<Col2ImParam, false, -1>)
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_col2im"});

TS_REGISTER_OP(_backward_col2im)
    .describe(
        "Gradient of col2im: im2col of the output gradient (input 0), shaped as the "
        "columns (input 1).")
    .set_num_inputs(2)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<Col2ImParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", PatchBackwardShape<Col2ImShape>)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, PatchCompute<Col2ImParam, true, 0>);

}  // namespace tessera::op
