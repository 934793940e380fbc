// khatri_rao (MXNet's): the column-wise Kronecker product of matrices with
// the same number of columns. MXNet gives it no gradient; neither does this.
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/op.h"
#include "engine/op/params.h"
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

void KhatriRaoCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in,
                      const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const int64_t rows = out[0].shape()[0], cols = out[0].shape()[1];
  SwitchNumericDType(
      out[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* y = out[0].dptr<T>();
        const bool add = req[0] == kAddTo;
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t k = 0; k < cols; ++k) {
            // Row r in mixed radix, the first matrix's row most significant.
            int64_t rest = r;
            AccType<T> v = 1;
            for (size_t j = in.size(); j-- > 0;) {
              const int64_t m = in[j].shape()[0];
              v *= static_cast<AccType<T>>(in[j].dptr<T>()[(rest % m) * cols + k]);
              rest /= m;
            }
            y[r * cols + k] = add ? static_cast<T>(y[r * cols + k] + v) : static_cast<T>(v);
          }
      },
      "khatri_rao");
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
    .set_attr<FCompute>(kFComputeCPU, KhatriRaoCompute);

}  // namespace tessera::op
