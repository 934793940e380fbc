#include "ops/tensor/elemwise_sum_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(add_n)
    .add_alias("ElementWiseSum")
    .add_alias("_grad_add")
    .describe(R"(The elementwise sum of any number of arrays of one shape and dtype.

Example: add_n([1, 2], [10, 20], [100, 200]) = [111, 222].)")
    .set_num_inputs([](const NodeAttrs& a) {
      return static_cast<uint32_t>(ParamsOf<AddNParam>(a).num_args);
    })
    .set_attr_parser(ParamParser<AddNParam>)
    .set_key_var_num_args("num_args")
    .add_argument("args", "NDArray[]", "The arrays to add.")
    .add_arguments(AddNParam::Fields())
    .set_attr<FInferShape>("FInferShape", ElemwiseShape<-1, 1>)
    .set_attr<FInferType>("FInferType", ElemwiseTypeOf<kNumericTypes>)
    .set_attr<FInplaceOption>("FInplaceOption",
                              [](const NodeAttrs&) {
                                return std::vector<std::pair<int, int>>{{0, 0}};
                              })
    .set_attr<FGradient>("FGradient",
                         [](const NodePtr& n, const std::vector<NodeEntry>& ograds) {
                           // d(sum)/d(each input) is the output gradient itself.
                           return std::vector<NodeEntry>(n->inputs.size(), ograds[0]);
                         })
    .set_attr<FLayoutClasses>("FLayoutClasses", ElementwiseLayout)
    .set_attr<FCompute>(kFComputeCPU, AddNCompute<cpu>);

}  // namespace tessera::op
