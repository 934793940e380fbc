// contrib.AdaptiveAvgPooling2D (MXNet's): average pooling of NCHW data to a
// fixed output size; shapes and registration (kernels in
// adaptive_avg_pooling-inl.h).
#include <vector>

#include "ops/nn/adaptive_avg_pooling-inl.h"
#include "ops/tensor/unary_backward_shape.h"

namespace tessera::op {
namespace {

bool AdaptiveShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[0];
  if (!d.known()) return false;
  TS_CHECK(d.ndim() == 4) << OpLabel(attrs) << ": data has shape " << d
                          << "; it must be NCHW (4 axes)";
  const auto [oh, ow] = AdaptiveOutputSize(attrs);
  AssignShape(attrs, out, 0, Shape{d[0], d[1], oh, ow}, "output");
  return true;
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
    .set_attr<FCompute>(kFComputeCPU, AdaptiveCompute<cpu, true>)
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_contrib_AdaptiveAvgPooling2D"});

TS_REGISTER_OP(_backward_contrib_AdaptiveAvgPooling2D)
    .describe("Gradient of AdaptiveAvgPooling2D: inputs dOut, data; output d data.")
    .set_num_inputs(2)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<AdaptivePoolParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", UnaryBackwardShape(AdaptiveShape))
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, AdaptiveCompute<cpu, false>);

}  // namespace tessera::op
