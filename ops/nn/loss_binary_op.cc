// softmax_cross_entropy (MXNet's src/operator/loss_binary_op*): the summed
// cross entropy of softmax(data) and integer labels, and its backward.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/nn/loss_binary_op-inl.h"
#include "ops/nn/nn_common.h"
#include "ops/nn/softmax_output-inl.h"

namespace tessera::op {

namespace {

// The GPU's probabilities and labels (the CPU works a row at a time).
std::vector<ResourceRequest> XentTempSpace(const NodeAttrs&) {
  return {ResourceRequest::kTempSpace};
}

bool SoftmaxCrossEntropyShape(const NodeAttrs& attrs, std::vector<Shape>* in,
                              std::vector<Shape>* out) {
  TS_CHECK(in->size() == 2) << OpLabel(attrs) << ": expects 2 inputs (data, label), got "
                            << in->size();
  const Shape& d = (*in)[0];
  const Shape& l = (*in)[1];
  AssignShape(attrs, out, 0, Shape{1}, "output");
  if (d.ndim() == 0 || l.ndim() == 0) {
    if (d.ndim() == 2 && l.ndim() == 0) AssignShape(attrs, in, 1, Shape{d[0]}, "input");
    return AllKnown(*in);
  }
  TS_CHECK(d.ndim() == 2) << OpLabel(attrs) << ": data must be 2-D (batch, classes), got " << d;
  TS_CHECK(l.ndim() == 1) << OpLabel(attrs) << ": label must be 1-D (batch), got " << l;
  TS_CHECK(d[0] == l[0] || d[0] == 0 || l[0] == 0)
      << OpLabel(attrs) << ": data " << d << " and label " << l
      << " differ in the batch size (axis 0)";
  AssignShape(attrs, in, 1, Shape{d[0]}, "input");
  return AllKnown(*in);
}

void SoftmaxCrossEntropyForward(const NodeAttrs& attrs, const OpContext& ctx,
                                const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                                const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const Shape& s = in[0].shape();
  const int64_t n = s[0], k = s[1];
  SwitchFloatDType(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = AccType<T>;
    std::vector<A> prob(static_cast<size_t>(std::max<int64_t>(k, 1)));
    const T* x = in[0].dptr<T>();
    const T* label = in[1].dptr<T>();
    A loss = A(0);
    for (int64_t r = 0; r < n; ++r) {
      SoftmaxSlice<false>(x + r * k, prob.data(), k, 1, A(1), kWriteTo);
      const int64_t c = LabelIndex(attrs, label, r, k);
      loss -= SoftmaxLog(std::max(prob[c], A(1e-8f)));
    }
    (void)ctx;
    SoftmaxStore(out[0].dptr<T>()[0], loss, req[0]);
  });
}

// Inputs: ograd (1,), data, label; outputs: data gradient, label gradient.
void SoftmaxCrossEntropyBackward(const NodeAttrs& attrs, const OpContext&,
                                 const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                                 const std::vector<TBlob>& out) {
  const Shape& s = in[1].shape();
  const int64_t n = s[0], k = s[1];
  SwitchFloatDType(in[1].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = AccType<T>;
    if (req[0] != kNullOp) {
      const A g = static_cast<A>(in[0].dptr<T>()[0]);
      const T* x = in[1].dptr<T>();
      const T* label = in[2].dptr<T>();
      T* gx = out[0].dptr<T>();
      std::vector<A> prob(static_cast<size_t>(std::max<int64_t>(k, 1)));
      for (int64_t r = 0; r < n; ++r) {
        SoftmaxSlice<false>(x + r * k, prob.data(), k, 1, A(1), kWriteTo);
        const int64_t c = LabelIndex(attrs, label, r, k);
        prob[c] -= A(1);
        for (int64_t j = 0; j < k; ++j) SoftmaxStore(gx[r * k + j], g * prob[j], req[0]);
      }
    }
    FillZeroReq<T>(out[1], req[1]);
  });
}

// Inputs: output gradient (1,), data, label: data and label pair as in the
// forward op (2-D data, one label per row), which the kernel relies on.
bool SoftmaxCrossEntropyBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in,
                                      std::vector<Shape>* out) {
  AssignShape(attrs, in, 0, Shape{1}, "input");
  std::vector<Shape> forward_in{(*in)[1], (*in)[2]}, forward_out(1);
  SoftmaxCrossEntropyShape(attrs, &forward_in, &forward_out);
  AssignShape(attrs, in, 1, forward_in[0], "input");
  AssignShape(attrs, in, 2, forward_in[1], "input");
  AssignShape(attrs, out, 0, (*in)[1], "output");
  AssignShape(attrs, in, 1, (*out)[0], "input");
  AssignShape(attrs, out, 1, (*in)[2], "output");
  AssignShape(attrs, in, 2, (*out)[1], "input");
  return AllKnown(*in) && AllKnown(*out);
}

}  // namespace

TS_REGISTER_OP(softmax_cross_entropy)
    .describe(R"(Calculate cross entropy of softmax output and one-hot label.

Applies the softmax to each row of the 2-D data (batch, classes), then sums
over the batch the cross entropy -log(softmax(data)[label]) (the
probability is clamped below at 1e-8, as MXNet does). The labels are class
indices (0-based) stored in an array of the data's dtype, one per row. The
output has shape (1,).

Example: data = [[1, 2, 3], [11, 7, 5]], label = [2, 0]:
softmax(data) = [[0.0900, 0.2447, 0.6652], [0.9796, 0.0179, 0.0024]],
softmax_cross_entropy(data, label) = -log(0.6652) - log(0.9796) = 0.4282.)")
    .set_num_inputs(2)
    .set_num_outputs(1)
    .add_argument("data", "NDArray", "Input data")
    .add_argument("label", "NDArray", "Input label")
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data", "label"}))
    .set_attr<FInferShape>("FInferShape", SoftmaxCrossEntropyShape)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FResourceRequest>("FResourceRequest", XentTempSpace)
    .set_attr<FCompute>(kFComputeCPU, SoftmaxCrossEntropyForward)
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_softmax_cross_entropy"});

TS_REGISTER_OP(_backward_softmax_cross_entropy)
    .describe(
        "Backward of softmax_cross_entropy: ograd * (softmax(data) - one_hot(label)) for "
        "the data, zeros for the label. Inputs: ograd, data, label.")
    .set_num_inputs(3)
    .set_num_outputs(2)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", SoftmaxCrossEntropyBackwardShape)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FResourceRequest>("FResourceRequest", XentTempSpace)
    .set_attr<FCompute>(kFComputeCPU, SoftmaxCrossEntropyBackward);

}  // namespace tessera::op
