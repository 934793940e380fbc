// SVMOutput (MXNet's): the identity forward; its backward ignores the head
// gradient and gives the gradient of the multi-class hinge loss (L1) or its
// square (L2, the default) against the label, as MXNet's svm_output-inl.h.
#include <vector>

#include "ops/nn/nn_common.h"
#include "ops/nn/softmax_output-inl.h"

namespace tessera::op {
namespace {

struct SVMOutputParam : Params<SVMOutputParam> {
  float margin = 1.f, regularization_coefficient = 1.f;
  bool use_linear = false;
  static void Declare(ParamDecl<SVMOutputParam>& d) {
    d.field("margin", &SVMOutputParam::margin)
        .set_default(1.f)
        .describe("The margin of the hinge loss.");
    d.field("regularization_coefficient", &SVMOutputParam::regularization_coefficient)
        .set_default(1.f)
        .describe("Scale of the gradient.");
    d.field("use_linear", &SVMOutputParam::use_linear)
        .set_default(false)
        .describe("The L1 (linear) hinge loss instead of the squared (L2) one.");
  }
};

// data (..., K), label data's shape without the last axis.
bool SVMShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[0];
  if (!d.known()) return false;
  TS_CHECK(d.ndim() >= 2) << OpLabel(attrs) << ": data has shape " << d
                          << "; it needs a class axis last and one or more axes before it";
  AssignShape(attrs, in, 1, Shape(d.begin(), d.end() - 1), "label");
  AssignShape(attrs, out, 0, d, "output");
  return true;
}

void SVMForward(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in,
                const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp || in[0].dptr_ == out[0].dptr_) return;
  SwitchFloatDType(out[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = in[0].dptr<T>();
    T* y = out[0].dptr<T>();
    for (int64_t i = 0, n = out[0].Size(); i < n; ++i)
      y[i] = req[0] == kAddTo ? T(float(y[i]) + float(x[i])) : x[i];
  });
}

// in: label, out; outputs: d data, d label (zero). With o the output, y the
// label's class and c the coefficient: L1 gives -c [margin > o_y] at y and
// c [margin > -o_j] elsewhere; L2 -2c (margin - o_y) and 2c (margin + o_j)
// where those are positive, else 0.
void SVMBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<SVMOutputParam>(attrs);
  const int64_t k = in[1].shape()[in[1].ndim() - 1], rows = in[1].Size() / k;
  ForFloatAndDouble(attrs, in[1].dtype(), "_backward_SVMOutput", [&](auto zero) {
    using T = decltype(zero);
    const T* label = in[0].dptr<T>();
    const T* o = in[1].dptr<T>();
    T* g = out[0].dptr<T>();
    const double m = p.margin, c = p.regularization_coefficient;
    for (int64_t r = 0; r < rows; ++r) {
      const double lv = label[r];
      TS_CHECK(lv >= 0 && lv < double(k) && lv == double(int64_t(lv)))
          << OpLabel(attrs) << ": label[" << r << "] = " << lv << " is not a class in [0, " << k
          << ")";
      const int64_t y = int64_t(lv);
      for (int64_t j = 0; j < k; ++j) {
        const double v = o[r * k + j];
        double d;
        if (j == y)
          d = p.use_linear ? (m > v ? -c : 0) : (m > v ? -2 * c * (m - v) : 0);
        else
          d = p.use_linear ? (m > -v ? c : 0) : (m > -v ? 2 * c * (m + v) : 0);
        if (req[0] == kAddTo)
          g[r * k + j] = T(g[r * k + j] + d);
        else if (req[0] != kNullOp)
          g[r * k + j] = T(d);
      }
    }
    FillZeroReq<T>(out[1], req[1]);
  });
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
    .set_attr<FCompute>(kFComputeCPU, SVMForward)
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
    .set_attr<FCompute>(kFComputeCPU, SVMBackward);

}  // namespace tessera::op
