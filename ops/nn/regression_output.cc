// LinearRegressionOutput, MAERegressionOutput, LogisticRegressionOutput
// (MXNet's src/operator/regression_output-inl.h): the forward is the
// identity (logistic: the sigmoid), the backward ignores the head gradient
// and gives the gradient of the loss against the label, scaled by
// grad_scale / (label.size / label.shape[0]).
#include <cmath>
#include <vector>

#include "ops/nn/nn_common.h"
#include "ops/nn/regression_output-inl.h"

namespace tessera::op {

namespace {

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
      .set_attr<FCompute>(kFComputeCPU, RegressionForward<cpu, kind>)                \
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
      .set_attr<FCompute>(kFComputeCPU, RegressionBackward<cpu, kind>)

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
