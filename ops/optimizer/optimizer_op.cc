// Registration of the fused optimizer updates (CPU).
#include "ops/optimizer/optimizer_op-inl.h"

namespace tessera::op {

namespace {

bool UpdateType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const bool ok = SameTypeAll(attrs, in, out);
  for (size_t i = 0; i < in->size(); ++i)
    TS_CHECK((*in)[i] == DType::kUnknown || (*in)[i] == DType::kFloat32 ||
             (*in)[i] == DType::kFloat64)
        << OpLabel(attrs) << ": input " << i << " has dtype " << DTypeName((*in)[i])
        << ", supported: float32, float64";
  return ok;
}

std::vector<std::pair<int, int>> InplaceWeight(const NodeAttrs&) {
  return {{0, 0}};
}

FListInputNames Names(std::vector<std::string> names) {
  return [names](const NodeAttrs&) { return names; };
}

FMutateInputs Mutates(std::vector<uint32_t> idx) {
  return [idx](const NodeAttrs&) { return idx; };
}

const char* const kInPlaceDoc = R"(

The update is not in place by itself: the new weight is the output, and
`out=weight` (mx.nd.<op>(weight, grad, ..., {out = weight})) writes it over
the weight, as MXNet's optimizers do. The state inputs are updated in place.
float32 and float64.)";

}  // namespace

#define TS_UPDATE_OP(name, Param, n_in, fn)                         \
  TS_REGISTER_OP(name)                                              \
      .set_num_inputs(n_in)                                         \
      .set_num_outputs(1)                                           \
      .set_attr_parser(ParamParser<Param>)                          \
      .set_attr<FInferShape>("FInferShape", ElemwiseShape<n_in, 1>) \
      .set_attr<FInferType>("FInferType", UpdateType)               \
      .set_attr<FInplaceOption>("FInplaceOption", InplaceWeight)    \
      .set_attr<FCompute>(kFComputeCPU, fn<cpu>)

TS_UPDATE_OP(sgd_update, SGDParam, 2, SGDUpdate)
    .describe(std::string(R"(Update function for Stochastic Gradient Descent (SGD) optimizer.

It updates the weights using::

 weight = weight - learning_rate * (gradient + wd * weight)

with gradient = clip(rescale_grad * grad, clip_gradient) (MXNet's kernel:
(1 - lr * wd) * weight - lr * clip(rescale_grad * grad); no clipping when
clip_gradient < 0).)") +
              kInPlaceDoc)
    .add_argument("weight", "NDArray", "Weight")
    .add_argument("grad", "NDArray", "Gradient")
    .add_arguments(SGDParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", Names({"weight", "grad"}));

TS_UPDATE_OP(sgd_mom_update, SGDMomParam, 3, SGDMomUpdate)
    .describe(
        std::string(R"(Momentum update function for Stochastic Gradient Descent (SGD) optimizer.

It updates the weights using::

  v = momentum * v - learning_rate * gradient
  weight += v

Where the parameter ``momentum`` is the decay rate of momentum estimates at
each epoch, gradient = clip(rescale_grad * grad, clip_gradient) + wd * weight
(the weight decay is not clipped). `mom` is updated in place.)") +
        kInPlaceDoc)
    .add_argument("weight", "NDArray", "Weight")
    .add_argument("grad", "NDArray", "Gradient")
    .add_argument("mom", "NDArray", "Momentum")
    .add_arguments(SGDMomParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", Names({"weight", "grad", "mom"}))
    .set_attr<FMutateInputs>("FMutateInputs", Mutates({2}));

TS_UPDATE_OP(nag_mom_update, NAGMomParam, 3, NAGMomUpdate)
    .describe(std::string(R"(Update function for Nesterov Accelerated Gradient( NAG) optimizer.
It updates the weights using the following formula,

  v_t = gamma v_{t-1} + eta * grad J(W_{t-1} - gamma v_{t-1})
  W_t = W_{t-1} - v_t

As MXNet's kernel, with g = clip(rescale_grad * grad, clip_gradient) +
wd * weight and m = momentum * mom:
weight = weight - m + (momentum + 1) * (m - lr * g), mom = m - lr * g.
`mom` is updated in place.)") +
              kInPlaceDoc)
    .add_argument("weight", "NDArray", "Weight")
    .add_argument("grad", "NDArray", "Gradient")
    .add_argument("mom", "NDArray", "Momentum")
    .add_arguments(NAGMomParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", Names({"weight", "grad", "mom"}))
    .set_attr<FMutateInputs>("FMutateInputs", Mutates({2}));

TS_UPDATE_OP(adam_update, AdamParam, 4, AdamUpdate)
    .describe(std::string(R"(Update function for Adam optimizer. Adam is seen as a generalization
of AdaGrad.

Adam update consists of the following steps, where g represents gradient and m, v
are 1st and 2nd order moment estimates (mean and variance).

  g_t = clip(rescale_grad * grad + wd * weight, clip_gradient)
  m_t = beta1 * m_{t-1} + (1 - beta1) * g_t
  v_t = beta2 * v_{t-1} + (1 - beta2) * g_t^2
  W_t = W_{t-1} - lr * m_t / (sqrt(v_t) + epsilon)

No bias correction here: MXNet's optimizer folds it into lr. `mean` and
`var` are updated in place.)") +
              kInPlaceDoc)
    .add_argument("weight", "NDArray", "Weight")
    .add_argument("grad", "NDArray", "Gradient")
    .add_argument("mean", "NDArray", "Moving mean")
    .add_argument("var", "NDArray", "Moving variance")
    .add_arguments(AdamParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", Names({"weight", "grad", "mean", "var"}))
    .set_attr<FMutateInputs>("FMutateInputs", Mutates({2, 3}));

TS_UPDATE_OP(rmsprop_update, RMSPropParam, 3, RMSPropUpdate)
    .describe(std::string(R"(Update function for `RMSProp` optimizer (Tieleman & Hinton, 2012).

  g = clip(rescale_grad * grad + wd * weight, clip_gradient)
  n = (1 - gamma1) * g^2 + gamma1 * n
  weight = clip(weight - lr * g / sqrt(n + epsilon), clip_weights)

`n` is updated in place. The centered variant (Graves, 2013; MXNet's
RMSProp optimizer with centered=True) is rmspropalex_update.)") +
              kInPlaceDoc)
    .add_argument("weight", "NDArray", "Weight")
    .add_argument("grad", "NDArray", "Gradient")
    .add_argument("n", "NDArray", "n")
    .add_arguments(RMSPropParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", Names({"weight", "grad", "n"}))
    .set_attr<FMutateInputs>("FMutateInputs", Mutates({2}));

TS_UPDATE_OP(rmspropalex_update, RMSPropAlexParam, 5, RMSPropAlexUpdate)
    .describe(std::string(R"(Update function for RMSPropAlex optimizer (centered RMSProp,
Graves 2013, Eq. 38-45).

  g = clip(rescale_grad * grad + wd * weight, clip_gradient)
  n = (1 - gamma1) * g^2 + gamma1 * n
  g_avg = (1 - gamma1) * g + gamma1 * g_avg
  delta = gamma2 * delta - lr * g / sqrt(n - g_avg^2 + epsilon)
  weight = clip(weight + delta, clip_weights)

`n`, `g` and `delta` are updated in place.)") +
              kInPlaceDoc)
    .add_argument("weight", "NDArray", "Weight")
    .add_argument("grad", "NDArray", "Gradient")
    .add_argument("n", "NDArray", "n")
    .add_argument("g", "NDArray", "g")
    .add_argument("delta", "NDArray", "delta")
    .add_arguments(RMSPropAlexParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", Names({"weight", "grad", "n", "g", "delta"}))
    .set_attr<FMutateInputs>("FMutateInputs", Mutates({2, 3, 4}));

}  // namespace tessera::op
