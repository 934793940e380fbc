// SVMOutput (MXNet's): the identity forward; its backward ignores the head
// gradient and gives the gradient of the multi-class hinge loss (L1) or its
// square (L2, the default) against the label, as MXNet's svm_output-inl.h.
// Kernels in svm_output-inl.h.
#include "ops/nn/svm_output-inl.h"

namespace tessera::op {
namespace {

// The GPU kernel uploads the checked labels into temp space.
std::vector<ResourceRequest> SvmTempSpace(const NodeAttrs&) {
  return {ResourceRequest::kTempSpace};
}

}  // namespace

TS_REGISTER_OP(SVMOutput)
    .describe(R"(A support-vector-machine output layer (MXNet's SVMOutput): the
forward passes data through; the backward ignores the head gradient and gives
the gradient of the one-vs-all hinge loss for the label's class, squared
(the default) or linear (use_linear), scaled by regularization_coefficient.
data (..., K), label (...) of class indices 0..K-1.)")
    .set_num_inputs(2)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<SVMOutputParam>)
    .add_argument("data", "NDArray", "Scores, (..., K).")
    .add_argument("label", "NDArray", "Class indices, (...).")
    .add_arguments(SVMOutputParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data", "label"}))
    .set_attr<FInferShape>("FInferShape", SVMShape)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FInplaceOption>("FInplaceOption",
                              [](const NodeAttrs&) {
                                return std::vector<std::pair<int, int>>{{0, 0}};
                              })
    .set_attr<FCompute>(kFComputeCPU, SVMForward<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>&) {
      return MakeGradNode("_backward_SVMOutput", n, {n->inputs[1], NodeEntry{n, 0, 0}});
    });

TS_REGISTER_OP(_backward_SVMOutput)
    .describe("Backward of SVMOutput: inputs label, out; outputs d data, d label (zeros).")
    .set_num_inputs(2)
    .set_num_outputs(2)
    .set_attr_parser(ParamParser<SVMOutputParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& attrs, std::vector<Shape>* in,
                              std::vector<Shape>* out) {
                             std::vector<Shape> fin{(*in)[1], (*in)[0]}, fout(1);
                             if (!SVMShape(attrs, &fin, &fout)) return false;
                             AssignShape(attrs, in, 0, fin[1], "label");
                             AssignShape(attrs, out, 0, fin[0], "gradient of data");
                             AssignShape(attrs, out, 1, fin[1], "gradient of label");
                             return true;
                           })
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FResourceRequest>("FResourceRequest", SvmTempSpace)
    .set_attr<FCompute>(kFComputeCPU, SVMBackward<cpu>);

}  // namespace tessera::op
