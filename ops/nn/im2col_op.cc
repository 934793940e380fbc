// im2col and col2im (MXNet's): the patches of a convolution laid out as
// columns, (N, C * prod(kernel), L) for L output positions, and back, the
// overlapping patches summed. Each is the other's gradient. 1-D to 3-D.
#include <vector>

#include "ops/nn/im2col_op-inl.h"
#include "ops/tensor/unary_backward_shape.h"

namespace tessera::op {
namespace {

bool Im2ColShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known()) return false;
  AssignShape(attrs, out, 0, ColumnsOf(PatchGeomOf<Im2ColParam>(attrs, (*in)[0])), "output");
  return true;
}

bool Col2ImShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known()) return false;
  AssignShape(attrs, out, 0, ImageOf(attrs, (*in)[0]), "output");
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
    .set_attr<FCompute>(kFComputeCPU, PatchCompute<cpu, Im2ColParam, true, 0>)
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_im2col"});

TS_REGISTER_OP(_backward_im2col)
    .describe(
        "Gradient of im2col: col2im of the output gradient (input 0), shaped as the data "
        "(input 1).")
    .set_num_inputs(2)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<Im2ColParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", UnaryBackwardShape(Im2ColShape))
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, PatchCompute<cpu, Im2ColParam, false, 1>);

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
    .set_attr<FCompute>(kFComputeCPU, PatchCompute<cpu, Col2ImParam, false, -1>)
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_col2im"});

TS_REGISTER_OP(_backward_col2im)
    .describe(
        "Gradient of col2im: im2col of the output gradient (input 0), shaped as the "
        "columns (input 1).")
    .set_num_inputs(2)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<Col2ImParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", UnaryBackwardShape(Col2ImShape))
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, PatchCompute<cpu, Col2ImParam, true, 0>);

}  // namespace tessera::op
