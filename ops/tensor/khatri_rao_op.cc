// khatri_rao (MXNet's): the column-wise Kronecker product of matrices with
// the same number of columns. MXNet gives it no gradient; neither does this.
// The kernel is khatri_rao_op-inl.h, shared with the GPU (khatri_rao_op.cu).
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/op.h"
#include "engine/op/params.h"
#include "ops/tensor/khatri_rao_op-inl.h"
#include "ops/tensor/shape_grad_util.h"

namespace tessera::op {
namespace {

struct KhatriRaoParam : Params<KhatriRaoParam> {
  int num_args = 1;
  static void Declare(ParamDecl<KhatriRaoParam>& d) {
    d.field("num_args", &KhatriRaoParam::num_args)
        .set_lower_bound(1)
        .describe("Number of matrices.");
  }
};

uint32_t NumArgs(const NodeAttrs& attrs) {
  return uint32_t(ParamsOf<KhatriRaoParam>(attrs).num_args);
}

// Inputs (M_i, N) -> (prod M_i, N).
bool KhatriRaoShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  int64_t rows = 1, cols = -1;
  for (size_t i = 0; i < in->size(); ++i) {
    const Shape& s = (*in)[i];
    if (!s.known()) return false;
    TS_CHECK(s.ndim() == 2) << OpLabel(attrs) << ": input " << i << " has shape " << s
                            << "; every input must be a matrix";
    TS_CHECK(cols < 0 || s[1] == cols)
        << OpLabel(attrs) << ": input " << i << " has shape " << s << " but input 0 has " << cols
        << " columns; all must have the same";
    cols = s[1];
    rows *= s[0];
  }
  AssignShape(attrs, out, 0, Shape{rows, cols}, "output");
  return true;
}

}  // namespace

TS_REGISTER_OP(khatri_rao)
    .describe(R"(The Khatri-Rao product (MXNet's): for matrices (M_i, N) with the same
number of columns, the matrix (prod M_i, N) whose column k is the Kronecker
product of the inputs' columns k, the first input's row most significant.
No gradient.

Example: khatri_rao([[1, -1], [2, -3]], [[1, 4], [2, 5], [3, 6]]) =
[[1, -4], [2, -5], [3, -6], [2, -12], [4, -15], [6, -18]].)")
    .set_num_inputs(NumArgs)
    .set_attr_parser(ParamParser<KhatriRaoParam>)
    .set_key_var_num_args("num_args")
    .add_argument("args", "NDArray[]", "The matrices.")
    .add_arguments(KhatriRaoParam::Fields())
    .set_attr<FListInputNames>("FListInputNames",
                               [](const NodeAttrs& attrs) {
                                 return NumberedNames("arg", NumArgs(attrs));
                               })
    .set_attr<FInferShape>("FInferShape", KhatriRaoShape)
    .set_attr<FInferType>("FInferType", ElemwiseType<-1, 1>)
    .set_attr<FResourceRequest>("FResourceRequest",
                                [](const NodeAttrs&) {
                                  return std::vector<ResourceRequest>{ResourceRequest::kTempSpace};
                                })
    .set_attr<FCompute>(kFComputeCPU, KhatriRaoCompute<cpu>);

}  // namespace tessera::op
