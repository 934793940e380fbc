// ftml_update (MXNet's): Follow the Moving Leader (Zheng and Kwok, 2017),
// MXNet's FTMLKernel element by element.
#include "ops/optimizer/ftml_op-inl.h"
#include "ops/optimizer/update_signature.h"

namespace tessera::op {

TS_REGISTER_UPDATE(ftml_update, FTMLParam,
                   {{"weight", "Weight"},
                    {"grad", "Gradient"},
                    {"d", "Internal state d_t"},
                    {"v", "Internal state v_t"},
                    {"z", "Internal state z_t"}},
                   {2, 3, 4})
    .describe(R"(The FTML optimizer's update (MXNet's ftml_update):

  g = clip(rescale_grad * grad, clip_grad) + wd * weight
  v = beta2 * v + (1 - beta2) * g^2
  d_t = (1 - beta1^t) / lr * (sqrt(v / (1 - beta2^t)) + epsilon)
  z = beta1 * z + (1 - beta1) * g - (d_t - beta1 * d) * weight
  d = d_t;  weight = -z / d_t

d, v and z are updated in place; the new weight is the output (`out=weight`
makes the update in place). float32 and float64.)")
    .set_attr<FInferShape>("FInferShape", ElemwiseShape<5, 1>)
    .set_attr<FInferType>("FInferType", ElemwiseType<5, 1>)
    .set_attr<FInplaceOption>("FInplaceOption", InplaceWeight)
    .set_attr<FCompute>(kFComputeCPU, FTMLUpdate<cpu>);

}  // namespace tessera::op
