// SoftmaxOutput (alias Softmax) and its backward.
#include <sstream>

#include "ops/nn/softmax_output-inl.h"

namespace tessera::op {

namespace {

void CheckFloatType(const NodeAttrs& attrs, DType t, const char* what) {
  TS_CHECK(t == DType::kUnknown || IsFloatingPoint(t))
      << OpLabel(attrs) << ": " << what << " has dtype " << DTypeName(t)
      << ", supported: float16, bfloat16, float32, float64";
}

bool SoftmaxOutputShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 2) << OpLabel(attrs) << ": expects 2 inputs (data, label), got "
                            << in->size();
  const auto& p = ParamsOf<SoftmaxOutputParam>(attrs);
  if ((*in)[0].ndim() == 0 && (*out)[0].ndim() != 0) AssignShape(attrs, in, 0, (*out)[0], "input");
  const Shape dshape = (*in)[0];
  if (dshape.ndim() == 0) return false;
  const Shape& lshape = (*in)[1];
  if (!(dshape == lshape)) {  // the same shape: probabilities as labels
    if (p.multi_output) {
      TS_CHECK(dshape.ndim() >= 2)
          << OpLabel(attrs) << ": multi_output needs data with at least 2 dimensions, got "
          << dshape;
      if (dshape.known()) {
        const Shape l1{dshape[0], dshape.Size() / dshape[0] / dshape[1]};
        Shape l2;
        l2.push_back(dshape[0]);
        for (int i = 2; i < dshape.ndim(); ++i) l2.push_back(dshape[i]);
        Shape l3 = dshape;
        l3[1] = 1;
        if (lshape.ndim() == 0) {
          (*in)[1] = l1;
        } else {
          TS_CHECK(lshape == l1 || lshape == l2 || lshape == l3)
              << OpLabel(attrs) << ": label has shape " << lshape << ", expected " << l1 << " or "
              << l2 << " (multi_output, data " << dshape << ")";
        }
      }
    } else {
      Shape l;
      for (int i = 0; i + 1 < dshape.ndim(); ++i) l.push_back(dshape[i]);
      if (dshape.ndim() == 1) l.push_back(dshape[0]);
      AssignShape(attrs, in, 1, l, "input");
    }
  }
  AssignShape(attrs, out, 0, dshape, "output");
  return AllKnown(*in) && AllKnown(*out);
}

bool SoftmaxOutputType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const bool ok = SameTypeAll(attrs, in, out);
  for (DType t : *in) CheckFloatType(attrs, t, "input");
  return ok;
}

uint32_t SoftmaxOutputBackwardInputs(const NodeAttrs& attrs) {
  return ParamsOf<SoftmaxOutputParam>(attrs).out_grad ? 3 : 2;
}

// Inputs: label, out[, ograd]; outputs: data gradient, label gradient.
bool SoftmaxOutputBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in,
                                std::vector<Shape>* out) {
  // The label must be one the forward accepts for data of the output's shape:
  // the kernels read it by that shape.
  if ((*in)[0].known() && (*in)[1].known()) {
    std::vector<Shape> fwd_in{(*in)[1], (*in)[0]}, fwd_out(1);
    SoftmaxOutputShape(attrs, &fwd_in, &fwd_out);
  }
  AssignShape(attrs, out, 0, (*in)[1], "output");
  AssignShape(attrs, in, 1, (*out)[0], "input");
  if (in->size() > 2) {
    AssignShape(attrs, in, 2, (*in)[1], "input");
    AssignShape(attrs, in, 1, (*in)[2], "input");
    AssignShape(attrs, out, 0, (*in)[1], "output");
  }
  AssignShape(attrs, out, 1, (*in)[0], "output");
  AssignShape(attrs, in, 0, (*out)[1], "input");
  return AllKnown(*in) && AllKnown(*out);
}

struct SoftmaxOutputGrad {
  std::vector<NodeEntry> operator()(const NodePtr& n, const std::vector<NodeEntry>& ograds) const {
    std::vector<NodeEntry> in{n->inputs[1], NodeEntry{n, 0, 0}};
    if (ParamsOf<SoftmaxOutputParam>(n->attrs).out_grad) in.push_back(ograds[0]);
    return MakeGradNode("_backward_SoftmaxOutput", n, std::move(in));
  }
};

void SoftmaxOutputBackward(const NodeAttrs& attrs, const OpContext& ctx,
                           const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                           const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<SoftmaxOutputParam>(attrs);
  SwitchFloatDType(
      in[1].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (req[0] != kNullOp)
          SoftmaxOutputBackwardCpu<T>(ctx.run_ctx, p, in[0], in[1],
                                      in.size() > 2 ? &in[2] : nullptr, out[0], req[0]);
        FillZeroReq<T>(out[1], req[1]);
      },
      "_backward_SoftmaxOutput");
}

}  // namespace

TS_REGISTER_OP(SoftmaxOutput)
    .describe(R"(Computes the gradient of cross entropy loss with respect to softmax output.

The forward computes the softmax of the data (MXNet's SoftmaxOutput):
without `multi_output` each instance (the data seen as (n, rest)) along
the flattened trailing axes; with `preserve_shape` along the last axis;
with `multi_output` along axis 1 for every position (data (n, k, d1, ...)).

The backward ignores the head gradient (unless `out_grad`) and gives
(softmax - one_hot(label)) * grad_scale / norm, where norm is 1
(normalization='null'), the number of labels ('batch') or the number of
labels not equal to `ignore_label` ('valid'); with `multi_output` and
normalization 'null' or 'batch' it is also divided by the number of
positions per instance. Labels are class indices stored as floats
(0-based), one per instance (shape data.shape[:-1]; with `multi_output`
(n, d1*d2...) or (n, d1, d2, ...)); a label array of the data's shape holds
probabilities, and the gradient is then (out - label) * grad_scale.
`use_ignore` zeroes the gradient of instances labelled `ignore_label`;
`smooth_alpha` smooths the one-hot target (1 - alpha for the label,
alpha / (k - 1) for the others).

Example: SoftmaxOutput([[1, 2, 3]], label=[2]) = [[0.0900, 0.2447, 0.6652]],
gradient [[0.0900, 0.2447, -0.3348]].)")
    .add_alias("Softmax")
    .set_num_inputs(2)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<SoftmaxOutputParam>)
    .add_argument("data", "NDArray", "Input array.")
    .add_argument("label", "NDArray", "Ground truth label.")
    .add_arguments(SoftmaxOutputParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data", "label"}))
    .set_attr<FInferShape>("FInferShape", SoftmaxOutputShape)
    .set_attr<FInferType>("FInferType", SoftmaxOutputType)
    .set_attr<FInplaceOption>("FInplaceOption",
                              [](const NodeAttrs&) {
                                return std::vector<std::pair<int, int>>{{0, 0}};
                              })
    .set_attr<FCompute>(kFComputeCPU, SoftmaxOutputForward<cpu>)
    .set_attr<FGradient>("FGradient", SoftmaxOutputGrad{});

TS_REGISTER_OP(_backward_SoftmaxOutput)
    .describe(
        "Backward of SoftmaxOutput. Inputs: label, out[, ograd]; outputs: the data "
        "gradient and the label gradient (zeros).")
    .set_num_inputs(SoftmaxOutputBackwardInputs)
    .set_num_outputs(2)
    .set_attr_parser(ParamParser<SoftmaxOutputParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", SoftmaxOutputBackwardShape)
    .set_attr<FInferType>("FInferType", SoftmaxOutputType)
    .set_attr<FResourceRequest>("FResourceRequest",  // the GPU's count of valid labels
                                [](const NodeAttrs&) {
                                  return std::vector<ResourceRequest>{ResourceRequest::kTempSpace};
                                })
    .set_attr<FCompute>(kFComputeCPU, SoftmaxOutputBackward);

}  // namespace tessera::op
