// LinearRegressionOutput, MAERegressionOutput, LogisticRegressionOutput
// (MXNet's src/operator/regression_output-inl.h): the forward is the
// identity (logistic: the sigmoid), the backward ignores the head gradient
// and gives the gradient of the loss against the label, scaled by
// grad_scale / (label.size / label.shape[0]).
#include <cmath>
#include <vector>

#include "ops/nn/nn_common.h"
#include "ops/nn/softmax_output-inl.h"

namespace tessera::op {

namespace {

struct RegressionOutputParam : Params<RegressionOutputParam> {
  float grad_scale = 1.f;
  static void Declare(ParamDecl<RegressionOutputParam>& d) {
    d.field("grad_scale", &RegressionOutputParam::grad_scale)
        .set_default(1.f)
        .describe("Scale the gradient by a float factor");
  }
};

enum RegressionKind { kLinear, kMAE, kLogistic };

bool RegressionShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 2) << OpLabel(attrs) << ": expects 2 inputs (data, label), got "
                            << in->size();
  if ((*in)[0].ndim() == 0 && (*out)[0].ndim() != 0) AssignShape(attrs, in, 0, (*out)[0], "input");
  const Shape d = (*in)[0];
  if (!d.known()) return false;
  Shape& l = (*in)[1];
  if (l.ndim() == 0) {
    // A (n, 1) output takes a (n,) label by default, as in MXNet.
    l = (d.ndim() == 2 && d[1] == 1) ? Shape{d[0]} : d;
  } else {
    TS_CHECK(l.known() && l[0] == d[0] && l.Size() == d.Size())
        << OpLabel(attrs) << ": label has shape " << l << ", inconsistent with data " << d
        << " (the same first dimension and number of elements are required)";
  }
  AssignShape(attrs, out, 0, d, "output");
  return true;
}

template <RegressionKind kind>
struct regression_forward {
  template <int req, typename T>
  static void Run(int64_t n, T* out, const T* in) {
    using A = AccType<T>;
    for (int64_t i = 0; i < n; ++i) {
      const A x = static_cast<A>(in[i]);
      if constexpr (kind == kLogistic)
        AssignReq<req>(out[i], A(1) / (A(1) + std::exp(-x)));
      else
        AssignReq<req>(out[i], x);
    }
  }
};

template <RegressionKind kind>
void RegressionForward(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  SwitchFloatDType(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchReq(req[0], [&](auto r) {
      regression_forward<kind>::template Run<r.value>(out[0].shape().Size(), out[0].dptr<T>(),
                                                      in[0].dptr<T>());
    });
  });
}

// Inputs: label, out; outputs: data gradient, label gradient (zeros).
template <RegressionKind kind>
void RegressionBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                        const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<RegressionOutputParam>(attrs);
  SwitchFloatDType(in[1].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = AccType<T>;
    const Shape& ls = in[0].shape();
    const int64_t n = out[0].shape().Size();
    if (req[0] != kNullOp && n > 0) {
      const double num_output = double(ls.Size()) / double(ls[0]);
      const A scale = static_cast<A>(double(p.grad_scale) / num_output);
      const T* label = in[0].dptr<T>();
      const T* o = in[1].dptr<T>();
      T* g = out[0].dptr<T>();
      SwitchReq(req[0], [&](auto r) {
        for (int64_t i = 0; i < n; ++i) {
          const A diff = static_cast<A>(o[i]) - static_cast<A>(label[i]);
          A v;
          if constexpr (kind == kMAE)
            v = diff > A(0) ? A(1) : A(-1);  // MXNet's minus_sign: -1 at a tie
          else
            v = diff;
          AssignReq<r.value>(g[i], v * scale);
        }
      });
    }
    FillZeroReq<T>(out[1], req[1]);
  });
}

// Inputs label and out; the label pairs with the output as the forward op
// checked (same first dimension and number of values): the kernel reads
// both element by element.
bool RegressionBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in,
                             std::vector<Shape>* out) {
  AssignShape(attrs, out, 0, (*in)[1], "output");
  AssignShape(attrs, in, 1, (*out)[0], "input");
  AssignShape(attrs, out, 1, (*in)[0], "output");
  AssignShape(attrs, in, 0, (*out)[1], "input");
  const Shape &l = (*in)[0], &o = (*in)[1];
  if (l.known() && o.known()) {
    TS_CHECK(l[0] == o[0] && l.Size() == o.Size())
        << OpLabel(attrs) << ": label has shape " << l << ", inconsistent with output " << o
        << " (the same first dimension and number of elements are required)";
  }
  return AllKnown(*in) && AllKnown(*out);
}

struct RegressionGrad {
  const char* op_name;
  std::vector<NodeEntry> operator()(const NodePtr& n, const std::vector<NodeEntry>&) const {
    return MakeGradNode(op_name, n, {n->inputs[1], NodeEntry{n, 0, 0}});
  }
};

std::vector<std::pair<int, int>> InplaceFirst(const NodeAttrs&) {
  return {{0, 0}};
}

}  // namespace

#define TS_REGRESSION_OP(name, kind, backward, description)                          \
  TS_REGISTER_OP(name)                                                               \
      .describe(description)                                                         \
      .set_num_inputs(2)                                                             \
      .set_num_outputs(1)                                                            \
      .set_attr_parser(ParamParser<RegressionOutputParam>)                           \
      .add_argument("data", "NDArray", "Input data to the function.")                \
      .add_argument("label", "NDArray", "Input label to the function.")              \
      .add_arguments(RegressionOutputParam::Fields())                                \
      .set_attr<FListInputNames>("FListInputNames",                                  \
                                 [](const NodeAttrs&) {                              \
                                   return std::vector<std::string>{"data", "label"}; \
                                 })                                                  \
      .set_attr<FInferShape>("FInferShape", RegressionShape)                         \
      .set_attr<FInferType>("FInferType", FloatSameType)                             \
      .set_attr<FInplaceOption>("FInplaceOption", InplaceFirst)                      \
      .set_attr<FCompute>(kFComputeCPU, RegressionForward<kind>)                     \
      .set_attr<FGradient>("FGradient", RegressionGrad{#backward});                  \
  TS_REGISTER_OP(backward)                                                           \
      .describe("Backward of " #name                                                 \
                ". Inputs: label, out; outputs: the data gradient "                  \
                "and the label gradient (zeros).")                                   \
      .set_num_inputs(2)                                                             \
      .set_num_outputs(2)                                                            \
      .set_attr_parser(ParamParser<RegressionOutputParam>)                           \
      .set_attr<TIsBackward>("TIsBackward", true)                                    \
      .set_attr<FInferShape>("FInferShape", RegressionBackwardShape)                 \
      .set_attr<FInferType>("FInferType", FloatSameType)                             \
      .set_attr<FCompute>(kFComputeCPU, RegressionBackward<kind>)

TS_REGRESSION_OP(LinearRegressionOutput, kLinear, _backward_linear_reg_out,
                 R"(Computes and optimizes for squared loss during backward propagation.
Just outputs ``data`` during forward propagation.

If y_hat is the predicted value and y the label, the loss is
0.5 * (y_hat - y)^2 and the gradient (ignoring the head gradient) is
(y_hat - y) * grad_scale / m, m the number of values per instance
(label.size / label.shape[0]). The label takes the data's shape, or (n,)
for data of shape (n, 1).

Example: forward LinearRegressionOutput([[1], [2]], label=[0, 4]) = [[1], [2]],
gradient [[1], [-2]].)");

TS_REGRESSION_OP(MAERegressionOutput, kMAE, _backward_mae_reg_out,
                 R"(Computes mean absolute error of the input.
Just outputs ``data`` during forward propagation.

If y_hat is the predicted value and y the label, the loss is |y_hat - y|
and the gradient (ignoring the head gradient) is sign(y_hat - y) *
grad_scale / m, m the number of values per instance; as in MXNet the
gradient is -1 where y_hat == y.

Example: forward MAERegressionOutput([[1], [2]], label=[0, 4]) = [[1], [2]],
gradient [[1], [-1]].)");

TS_REGRESSION_OP(LogisticRegressionOutput, kLogistic, _backward_logistic_reg_out,
                 R"(Applies a logistic function to the input.
The forward is sigmoid(data) = 1 / (1 + exp(-data)).

The backward gives the gradient of the binary cross entropy (ignoring the
head gradient): (sigmoid(data) - label) * grad_scale / m, m the number of
values per instance. Labels are in [0, 1].

Example: forward LogisticRegressionOutput([[0]], label=[1]) = [[0.5]],
gradient [[-0.5]].)");

}  // namespace tessera::op
