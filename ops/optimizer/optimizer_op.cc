// Registration of the fused optimizer updates (CPU).
#include "ops/optimizer/optimizer_op-inl.h"
#include "ops/optimizer/update_signature.h"

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

// lamb_update_phase2: weight and g of one shape, r1 and r2 of one element.
bool LambPhase2Shape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 4 && out->size() == 1) << OpLabel(attrs) << ": expects 4 inputs, 1 output";
  for (size_t i : {size_t{2}, size_t{3}}) {
    if ((*in)[i].ndim() == 0) AssignShape(attrs, in, i, Shape{1}, "norm");
    TS_CHECK(!(*in)[i].known() || (*in)[i].Size() == 1)
        << OpLabel(attrs) << ": input " << i << " (a norm) must hold one element, got " << (*in)[i];
  }
  std::vector<Shape> wg{(*in)[0], (*in)[1]};
  const bool ok = ElemwiseShape<2, 1>(attrs, &wg, out);
  AssignShape(attrs, in, 0, wg[0], "weight");
  AssignShape(attrs, in, 1, wg[1], "g");
  return ok;
}

const char* const kInPlaceDoc = R"(

The update is not in place by itself: the new weight is the output, and
`out=weight` (mx.nd.<op>(weight, grad, ..., {out = weight})) writes it over
the weight, as MXNet's optimizers do. The state inputs are updated in place.
float32 and float64.)";

}  // namespace

// An update whose inputs and output all have the weight's shape and dtype;
// the arguments after fn are UpdateSignature's inputs and states.
#define TS_UPDATE_OP(name, Param, n_in, fn, ...)                    \
  TS_REGISTER_UPDATE(name, Param, __VA_ARGS__)                      \
      .set_attr<FInferShape>("FInferShape", ElemwiseShape<n_in, 1>) \
      .set_attr<FInferType>("FInferType", UpdateType)               \
      .set_attr<FInplaceOption>("FInplaceOption", InplaceWeight)    \
      .set_attr<FCompute>(kFComputeCPU, fn<cpu>)

TS_UPDATE_OP(sgd_update, SGDParam, 2, SGDUpdate, {{"weight", "Weight"}, {"grad", "Gradient"}})
    .describe(std::string(R"(Update function for Stochastic Gradient Descent (SGD) optimizer.

It updates the weights using::

 weight = weight - learning_rate * (gradient + wd * weight)

with gradient = clip(rescale_grad * grad, clip_gradient) (MXNet's kernel:
(1 - lr * wd) * weight - lr * clip(rescale_grad * grad); no clipping when
clip_gradient < 0).)") +
              kInPlaceDoc);

TS_UPDATE_OP(sgd_mom_update, SGDMomParam, 3, SGDMomUpdate,
             {{"weight", "Weight"}, {"grad", "Gradient"}, {"mom", "Momentum"}}, {2})
    .describe(
        std::string(R"(Momentum update function for Stochastic Gradient Descent (SGD) optimizer.

It updates the weights using::

  v = momentum * v - learning_rate * gradient
  weight += v

Where the parameter ``momentum`` is the decay rate of momentum estimates at
each epoch, gradient = clip(rescale_grad * grad, clip_gradient) + wd * weight
(the weight decay is not clipped). `mom` is updated in place.)") +
        kInPlaceDoc);

TS_UPDATE_OP(nag_mom_update, NAGMomParam, 3, NAGMomUpdate,
             {{"weight", "Weight"}, {"grad", "Gradient"}, {"mom", "Momentum"}}, {2})
    .describe(std::string(R"(Update function for Nesterov Accelerated Gradient( NAG) optimizer.
It updates the weights using the following formula,

  v_t = gamma v_{t-1} + eta * grad J(W_{t-1} - gamma v_{t-1})
  W_t = W_{t-1} - v_t

As MXNet's kernel, with g = clip(rescale_grad * grad, clip_gradient) +
wd * weight and m = momentum * mom:
weight = weight - m + (momentum + 1) * (m - lr * g), mom = m - lr * g.
`mom` is updated in place.)") +
              kInPlaceDoc);

TS_UPDATE_OP(adam_update, AdamParam, 4, AdamUpdate,
             {{"weight", "Weight"},
              {"grad", "Gradient"},
              {"mean", "Moving mean"},
              {"var", "Moving variance"}},
             {2, 3})
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
              kInPlaceDoc);

TS_UPDATE_OP(rmsprop_update, RMSPropParam, 3, RMSPropUpdate,
             {{"weight", "Weight"}, {"grad", "Gradient"}, {"n", "n"}}, {2})
    .describe(std::string(R"(Update function for `RMSProp` optimizer (Tieleman & Hinton, 2012).

  g = clip(rescale_grad * grad + wd * weight, clip_gradient)
  n = (1 - gamma1) * g^2 + gamma1 * n
  weight = clip(weight - lr * g / sqrt(n + epsilon), clip_weights)

`n` is updated in place. The centered variant (Graves, 2013; MXNet's
RMSProp optimizer with centered=True) is rmspropalex_update.)") +
              kInPlaceDoc);

TS_UPDATE_OP(
    rmspropalex_update, RMSPropAlexParam, 5, RMSPropAlexUpdate,
    {{"weight", "Weight"}, {"grad", "Gradient"}, {"n", "n"}, {"g", "g"}, {"delta", "delta"}},
    {2, 3, 4})
    .describe(std::string(R"(Update function for RMSPropAlex optimizer (centered RMSProp,
Graves 2013, Eq. 38-45).

  g = clip(rescale_grad * grad + wd * weight, clip_gradient)
  n = (1 - gamma1) * g^2 + gamma1 * n
  g_avg = (1 - gamma1) * g + gamma1 * g_avg
  delta = gamma2 * delta - lr * g / sqrt(n - g_avg^2 + epsilon)
  weight = clip(weight + delta, clip_weights)

`n`, `g` and `delta` are updated in place.)") +
              kInPlaceDoc);

TS_UPDATE_OP(signsgd_update, SignSGDParam, 2, SignSGDUpdate,
             {{"weight", "Weight"}, {"grad", "Gradient"}})
    .describe(std::string(R"(Update function for SignSGD optimizer.

  g_t = sign(gradient)
  weight = (1 - lr * wd) * weight - lr * g_t

(MXNet's kernel: the sign of the raw gradient; rescale_grad and
clip_gradient cannot change it.))") +
              kInPlaceDoc);

TS_UPDATE_OP(signum_update, SignumParam, 3, SignumUpdate,
             {{"weight", "Weight"}, {"grad", "Gradient"}, {"mom", "Momentum"}}, {2})
    .describe(std::string(R"(SIGN momentUM (Signum) optimizer.

  mom = momentum * mom - (1 - momentum) * (wd * weight + g)
  weight = (1 - lr * wd_lh) * weight + lr * sign(mom)

with g = clip(rescale_grad * grad, clip_gradient). `mom` is updated in place.)") +
              kInPlaceDoc);

TS_UPDATE_OP(ftrl_update, FtrlParam, 4, FtrlUpdate,
             {{"weight", "Weight"}, {"grad", "Gradient"}, {"z", "z"}, {"n", "Square of grad"}},
             {2, 3})
    .describe(std::string(R"(Update function for Ftrl optimizer (McMahan et al., 2013).

  g = clip(rescale_grad * grad, clip_gradient)
  z += g - (sqrt(n + g^2) - sqrt(n)) * weight / lr
  n += g^2
  weight = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd) * (|z| > lamda1)

`z` and `n` are updated in place.)") +
              kInPlaceDoc);

TS_UPDATE_OP(adamw_update, AdamWParam, 4, AdamWUpdate,
             {{"weight", "Weight"},
              {"grad", "Gradient"},
              {"mean", "Moving mean"},
              {"var", "Moving variance"}},
             {2, 3})
    .add_alias("_adamw_update")
    .describe(std::string(R"(Update function for AdamW optimizer (Adam with decoupled weight
decay, Loshchilov and Hutter).

  g = clip(rescale_grad * grad, clip_gradient)
  m = beta1 * m + (1 - beta1) * g
  v = beta2 * v + (1 - beta2) * g^2
  weight = weight - eta * (lr * m / (sqrt(v) + epsilon) + wd * weight)

The decay is not part of the gradient: Adam's moments never see it. MXNet's
_adamw_update takes rescale_grad as an array; here it is a parameter.
`mean` and `var` are updated in place.)") +
              kInPlaceDoc);

TS_REGISTER_UPDATE(lamb_update_phase1, LambPhase1Param,
                   {{"weight", "Weight"},
                    {"grad", "Gradient"},
                    {"mean", "Moving mean"},
                    {"var", "Moving variance"}},
                   {2, 3})
    .describe(R"(Phase I of the LAMB update (You et al., 2019): the moments and the
update direction g (the output).

  grad = clip(rescale_grad * grad, clip_gradient)
  mean = beta1 * mean + (1 - beta1) * grad
  var = beta2 * var + (1 - beta2) * grad^2
  g = mean_hat / (sqrt(var_hat) + epsilon) + wd * weight

mean_hat = mean / (1 - beta1^t) and var_hat = var / (1 - beta2^t) with
bias_correction, mean and var otherwise. `mean` and `var` are updated in
place; the weight is read, not written (lamb_update_phase2 writes it).)")
    .set_attr<FInferShape>("FInferShape", ElemwiseShape<4, 1>)
    .set_attr<FInferType>("FInferType", UpdateType)
    .set_attr<FCompute>(kFComputeCPU, LambPhase1<cpu>);

TS_REGISTER_UPDATE(lamb_update_phase2, LambPhase2Param,
                   {{"weight", "Weight"},
                    {"g", "Output of lamb_update_phase1"},
                    {"r1", "r1: the norm of the weight"},
                    {"r2", "r2: the norm of g"}})
    .describe(std::string(R"(Phase II of the LAMB update: the step scaled by the trust ratio.

  r1 = min(max(r1, lower_bound), upper_bound)   (bounds <= 0 are not set)
  weight = weight - lr * (r1 / r2) * g          (ratio 1 when r1 or r2 is 0)

r1 is the norm of the weight and r2 that of g (one-element arrays: norm(weight),
norm(g)).)") + kInPlaceDoc)
    .set_attr<FInferShape>("FInferShape", LambPhase2Shape)
    .set_attr<FInferType>("FInferType", UpdateType)
    .set_attr<FInplaceOption>("FInplaceOption", InplaceWeight)
    .set_attr<FCompute>(kFComputeCPU, LambPhase2<cpu>);

}  // namespace tessera::op
