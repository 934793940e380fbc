// Correlation (MXNet's, FlowNet's correlation layer): shapes and
// registration; the kernels are in correlation-inl.h.
#include <vector>

#include "ops/nn/correlation-inl.h"

namespace tessera::op {
namespace {

bool CorrelationShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known() && (*in)[1].known()) AssignShape(attrs, in, 0, (*in)[1], "data1");
  if (!(*in)[0].known()) return false;
  AssignShape(attrs, in, 1, (*in)[0], "data2");
  const CorrGeom g = CorrGeomOf(attrs, (*in)[0]);
  AssignShape(attrs, out, 0, Shape{g.n, g.top_c, g.top_h, g.top_w}, "output");
  return true;
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
    .set_attr<FCompute>(kFComputeCPU, CorrelationForward<cpu>)
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
    .set_attr<FCompute>(kFComputeCPU, CorrelationBackward<cpu>);

}  // namespace tessera::op
