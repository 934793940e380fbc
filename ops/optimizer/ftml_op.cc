// ftml_update (MXNet's): Follow the Moving Leader (Zheng and Kwok, 2017),
// MXNet's FTMLKernel element by element.
#include "ops/optimizer/ftml_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(ftml_update)
    .describe(R"(The FTML optimizer's update (MXNet's ftml_update):

  g = clip(rescale_grad * grad, clip_grad) + wd * weight
  v = beta2 * v + (1 - beta2) * g^2
  d_t = (1 - beta1^t) / lr * (sqrt(v / (1 - beta2^t)) + epsilon)
  z = beta1 * z + (1 - beta1) * g - (d_t - beta1 * d) * weight
  d = d_t;  weight = -z / d_t

d, v and z are updated in place; the new weight is the output (`out=weight`
makes the update in place). float32 and float64.)")
    .set_num_inputs(5)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<FTMLParam>)
    .add_argument("weight", "NDArray", "Weight")
    .add_argument("grad", "NDArray", "Gradient")
    .add_argument("d", "NDArray", "Internal state d_t")
    .add_argument("v", "NDArray", "Internal state v_t")
    .add_argument("z", "NDArray", "Internal state z_t")
    .add_arguments(FTMLParam::Fields())
    .set_attr<FListInputNames>("FListInputNames",
                               FixedInputNames({"weight", "grad", "d", "v", "z"}))
    .set_attr<FMutateInputs>("FMutateInputs",
                             [](const NodeAttrs&) {
                               return std::vector<uint32_t>{2, 3, 4};
                             })
    .set_attr<FInferShape>("FInferShape", ElemwiseShape<5, 1>)
    .set_attr<FInferType>("FInferType", ElemwiseType<5, 1>)
    .set_attr<FInplaceOption>("FInplaceOption",
                              [](const NodeAttrs&) {
                                return std::vector<std::pair<int, int>>{{0, 0}};
                              })
    .set_attr<FCompute>(kFComputeCPU, FTMLUpdate<cpu>);

}  // namespace tessera::op
