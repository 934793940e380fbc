// linalg.gemm and linalg.gemm2 on the CPU (the BLAS's batches, one product
// at a time where the matrices interleave) and their registration; the
// computation is in linalg_gemm_op-inl.h.
#include <vector>

#include "ops/tensor/linalg_gemm_op-inl.h"

namespace tessera::op {

namespace {

template <typename P>
bool GemmShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &a = (*in)[0], &b = (*in)[1];
  if (!a.known() || !b.known()) return false;
  const auto& p = ParamsOf<P>(attrs);
  const Shape o = ProductShape(attrs, a, b, p.transpose_a, p.transpose_b, p.axis);
  if (in->size() == 3) AssignShape(attrs, in, 2, o, "input C");
  AssignShape(attrs, out, 0, o, "output");
  return true;
}

// in dOut, A, B: dOut must have the product's shape; the gradients have
// the forward inputs' shapes.
template <typename P>
bool GemmBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &a = (*in)[1], &b = (*in)[2];
  if (!a.known() || !b.known()) return false;
  const auto& p = ParamsOf<P>(attrs);
  const Shape o = ProductShape(attrs, a, b, p.transpose_a, p.transpose_b, p.axis);
  AssignShape(attrs, in, 0, o, "output gradient");
  AssignShape(attrs, out, 0, a, "gradient of A");
  AssignShape(attrs, out, 1, b, "gradient of B");
  if (out->size() == 3) AssignShape(attrs, out, 2, o, "gradient of C");
  return true;
}

std::vector<NodeEntry> GemmGrad(const NodePtr& n, const std::vector<NodeEntry>& og) {
  return MakeGradNode("_backward_linalg_gemm", n, {og[0], n->inputs[0], n->inputs[1]});
}
std::vector<NodeEntry> Gemm2Grad(const NodePtr& n, const std::vector<NodeEntry>& og) {
  return MakeGradNode("_backward_linalg_gemm2", n, {og[0], n->inputs[0], n->inputs[1]});
}

}  // namespace

TS_REGISTER_OP(_linalg_gemm)
    .describe(R"(out = alpha op(A) op(B) + beta C for every matrix of a batch
(MXNet's linalg.gemm); op(X) is X or, with transpose_a / transpose_b, its
transpose. The matrices' rows are on `axis` (default the second-last axis),
their columns on the last; every other axis is a batch axis, equal in A, B
and C. float32 and float64.

Example: A = [[1, 1], [1, 1]], B = [[1, 1], [1, 1], [1, 1]], C = [[1, 1, 1],
[1, 1, 1]]: gemm(A, B, C, transpose_b=1, alpha=2, beta=10) = [[14, 14, 14],
[14, 14, 14]].)")
    .set_num_inputs(3)
    .set_attr_parser(ParamParser<LinalgGemmParam>)
    .add_alias("linalg_gemm")
    .add_argument("A", "NDArray", "The first factor's matrices.")
    .add_argument("B", "NDArray", "The second factor's matrices.")
    .add_argument("C", "NDArray", "The matrices added, shaped as the output.")
    .add_arguments(LinalgGemmParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"A", "B", "C"}))
    .set_attr<FInferShape>("FInferShape", GemmShape<LinalgGemmParam>)
    .set_attr<FInferType>("FInferType", LinalgType)
    .set_attr<FInplaceOption>("FInplaceOption",
                              [](const NodeAttrs&) {
                                return std::vector<std::pair<int, int>>{{2, 0}};
                              })
    .set_attr<FCompute>(kFComputeCPU, GemmForward<cpu, LinalgGemmParam>)
    .set_attr<FGradient>("FGradient", GemmGrad);

[[maybe_unused]] static const Op& kGemmBackward =
    LinalgBackward(Op::Register("_backward_linalg_gemm"),
                   "Gradient of linalg.gemm: inputs dOut, A, B; outputs dA, dB, dC.", 3, 3,
                   GemmBackwardShape<LinalgGemmParam>, GemmBackward<cpu, LinalgGemmParam>)
        .set_attr_parser(ParamParser<LinalgGemmParam>);

TS_REGISTER_OP(_linalg_gemm2)
    .describe(R"(out = alpha op(A) op(B) for every matrix of a batch (MXNet's
linalg.gemm2): linalg.gemm without C. Rows on `axis`, columns on the last
axis, the other axes batch axes.

Example: A = [[1, 1], [1, 1]], B = [[1, 1], [1, 1], [1, 1]]:
gemm2(A, B, transpose_b=1, alpha=2) = [[4, 4, 4], [4, 4, 4]].)")
    .set_num_inputs(2)
    .set_attr_parser(ParamParser<LinalgGemm2Param>)
    .add_alias("linalg_gemm2")
    .add_argument("A", "NDArray", "The first factor's matrices.")
    .add_argument("B", "NDArray", "The second factor's matrices.")
    .add_arguments(LinalgGemm2Param::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"A", "B"}))
    .set_attr<FInferShape>("FInferShape", GemmShape<LinalgGemm2Param>)
    .set_attr<FInferType>("FInferType", LinalgType)
    .set_attr<FCompute>(kFComputeCPU, GemmForward<cpu, LinalgGemm2Param>)
    .set_attr<FGradient>("FGradient", Gemm2Grad);

[[maybe_unused]] static const Op& kGemm2Backward =
    LinalgBackward(Op::Register("_backward_linalg_gemm2"),
                   "Gradient of linalg.gemm2: inputs dOut, A, B; outputs dA, dB.", 3, 2,
                   GemmBackwardShape<LinalgGemm2Param>, GemmBackward<cpu, LinalgGemm2Param>)
        .set_attr_parser(ParamParser<LinalgGemm2Param>);

}  // namespace tessera::op
