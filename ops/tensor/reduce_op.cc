// sum, mean, prod, nansum, nanprod, max, min over any set of axes, and
// their backward ops.
#include "ops/tensor/reduce_op-inl.h"

namespace tessera::op {

namespace {

std::vector<std::pair<int, int>> GradInplace(const NodeAttrs&) {
  return {{1, 0}};
}

std::vector<ResourceRequest> TempSpace(const NodeAttrs&) {
  return {ResourceRequest::kTempSpace};
}

const char* const kAxesDoc = R"(

The axes come from `axis` (None or (): all), `exclude` turns the list
around, `keepdims` keeps reduced axes with size 1. Reducing every axis
without keepdims gives shape (1,).

Example, x = [[1, 2, 3], [4, 5, 6]]: sum(x) = [21], sum(x, axis=0) = [5, 7, 9],
sum(x, axis=1, keepdims=True) = [[6], [15]], sum(x, axis=1, exclude=True) = [5, 7, 9].)";

}  // namespace

// What every forward reduction over axes registers: `Reducer` in reduce::
// computes it over `kTypes`, and `GradMaker` builds the node of its
// backward op, always named _backward_<name>.
#define TS_REDUCE_AXES_OP(name, Reducer, kTypes, GradMaker, description)                 \
  TS_REGISTER_OP(name)                                                                   \
      .describe(std::string(description) + kAxesDoc)                                     \
      .set_num_inputs(1)                                                                 \
      .set_num_outputs(1)                                                                \
      .set_attr_parser(ParamParser<ReduceAxesParam>)                                     \
      .add_argument("data", "NDArray", "The input array.")                               \
      .add_arguments(ReduceAxesParam::Fields())                                          \
      .set_attr<FInferShape>("FInferShape", ReduceShape<ReduceAxesParam>)                \
      .set_attr<FInferType>("FInferType", ReduceType<kTypes>)                            \
      .set_attr<FCompute>(kFComputeCPU, ReduceAxesCompute<cpu, reduce::Reducer, kTypes>) \
      .set_attr<FGradient>("FGradient", GradMaker{"_backward_" #name})

#define TS_REDUCE_BACKWARD_OP(name, num_inputs, description)                      \
  TS_REGISTER_OP(name)                                                            \
      .describe(description)                                                      \
      .set_num_inputs(num_inputs)                                                 \
      .set_num_outputs(1)                                                         \
      .set_attr_parser(ParamParser<ReduceAxesParam>)                              \
      .set_attr<TIsBackward>("TIsBackward", true)                                 \
      .set_attr<FInferShape>("FInferShape", ReduceBackwardShape<ReduceAxesParam>) \
      .set_attr<FInferType>("FInferType", ElemwiseType<num_inputs, 1>)

// A backward op whose gradient `Grad` is computed element by element over
// the input, so the gradient may take the buffer of input 1.
#define TS_REDUCE_ELEMWISE_BACKWARD_OP(name, num_inputs, Grad, description) \
  TS_REDUCE_BACKWARD_OP(name, num_inputs, description)                      \
      .set_attr<FInplaceOption>("FInplaceOption", GradInplace)              \
      .set_attr<FCompute>(kFComputeCPU, ReduceBackwardCompute<cpu, Grad, TypeSet::kNumeric>)

TS_REDUCE_AXES_OP(sum, Sum, TypeSet::kNumeric, ReduceGradUseIn,
                  "Sum of the elements over the given axes. Integer dtypes sum in int64 and "
                  "wrap to the input dtype; float32 sums blocks in float and the blocks in "
                  "double; 16-bit floats accumulate in float.")
    .add_alias("sum_axis");

TS_REDUCE_AXES_OP(mean, Mean, TypeSet::kNumeric, ReduceGradUseIn,
                  "Mean of the elements over the given axes. Integer inputs give an integer "
                  "result in the input dtype (the int64 sum divided with truncation toward zero, "
                  "as MXNet does); cast to a float dtype first for a fractional mean.");

TS_REDUCE_AXES_OP(prod, Prod, TypeSet::kNumeric, ReduceGradUseInOut,
                  "Product of the elements over the given axes (integers multiply in int64 "
                  "and wrap to the input dtype). The gradient is the product of the other "
                  "elements, exact where elements are zero.");

TS_REDUCE_AXES_OP(nansum, NanSum, TypeSet::kNumeric, ReduceGradUseIn,
                  "Sum of the elements over the given axes, treating NaN as 0. The gradient "
                  "is 0 at NaN elements.");

TS_REDUCE_AXES_OP(nanprod, NanProd, TypeSet::kNumeric, ReduceGradUseInOut,
                  "Product of the elements over the given axes, treating NaN as 1. The "
                  "gradient is 0 at NaN elements.");

TS_REDUCE_AXES_OP(max, Max, TypeSet::kAll, ReduceGradUseInOut,
                  "Maximum of the elements over the given axes. NaN propagates (a slice "
                  "holding a NaN has maximum NaN, as in NumPy); bool gives logical or. The "
                  "gradient goes to every element equal to the maximum.")
    .add_alias("max_axis");

TS_REDUCE_AXES_OP(min, Min, TypeSet::kAll, ReduceGradUseInOut,
                  "Minimum of the elements over the given axes. NaN propagates (a slice "
                  "holding a NaN has minimum NaN, as in NumPy); bool gives logical and. The "
                  "gradient goes to every element equal to the minimum.")
    .add_alias("min_axis");

TS_REDUCE_ELEMWISE_BACKWARD_OP(
    _backward_sum, 2, SumGrad,
    "Gradient of sum: the output gradient broadcast back to the input shape. "
    "Inputs: ograd, data (read for its shape).");

TS_REDUCE_ELEMWISE_BACKWARD_OP(
    _backward_mean, 2, MeanGrad,
    "Gradient of mean: the output gradient divided by the number of reduced "
    "elements, broadcast back. Inputs: ograd, data.");

TS_REDUCE_ELEMWISE_BACKWARD_OP(_backward_nansum, 2, NanSumGrad,
                               "Gradient of nansum: the output gradient broadcast back, 0 at NaN "
                               "elements. Inputs: ograd, data.");

TS_REDUCE_ELEMWISE_BACKWARD_OP(_backward_max, 3, MinMaxGrad,
                               "Gradient of max: the output gradient at every element equal to the "
                               "maximum, 0 elsewhere. Inputs: ograd, data, out.");

TS_REDUCE_ELEMWISE_BACKWARD_OP(_backward_min, 3, MinMaxGrad,
                               "Gradient of min: the output gradient at every element equal to the "
                               "minimum, 0 elsewhere. Inputs: ograd, data, out.");

TS_REDUCE_BACKWARD_OP(_backward_prod, 3,
                      "Gradient of prod: the output gradient times the product of the other "
                      "elements (prefix and suffix products, exact with zeros). Inputs: ograd, "
                      "data, out.")
    .set_attr<FResourceRequest>("FResourceRequest", TempSpace)
    .set_attr<FCompute>(kFComputeCPU, ProdBackwardCompute<cpu, false>);

TS_REDUCE_BACKWARD_OP(_backward_nanprod, 3,
                      "Gradient of nanprod: as prod's with NaN elements counted as 1 and given "
                      "gradient 0. Inputs: ograd, data, out.")
    .set_attr<FResourceRequest>("FResourceRequest", TempSpace)
    .set_attr<FCompute>(kFComputeCPU, ProdBackwardCompute<cpu, true>);

}  // namespace tessera::op
