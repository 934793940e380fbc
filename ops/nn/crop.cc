// Crop (MXNet's legacy Crop): a window of every image of NCHW data, its size
// given (h_w) or taken from a second array's height and width, placed at an
// offset or centred. The gradient puts the output gradient back in the
// window, zeros elsewhere. Kernels in crop-inl.h.
#include "ops/nn/crop-inl.h"

namespace tessera::op {
namespace {

bool CropShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[0];
  if (!d.known() || (in->size() == 2 && !(*in)[1].known())) return false;
  const CropWindow c = WindowOf(attrs, d, in->size() == 2 ? &(*in)[1] : nullptr);
  AssignShape(attrs, out, 0, Shape{d[0], d[1], c.h, c.w}, "output");
  return true;
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
    .set_attr<FCompute>(kFComputeCPU, CropForward<cpu>)
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
    .set_attr<FCompute>(kFComputeCPU, CropBackward<cpu>);

}  // namespace tessera::op
