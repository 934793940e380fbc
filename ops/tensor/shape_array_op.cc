#include "ops/tensor/shape_array_op-inl.h"

namespace tessera::op {
namespace {

template <bool kSize>
bool ShapeArrayShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 1 && out->size() == 1) << OpLabel(attrs) << ": expects 1 input";
  const Shape& x = (*in)[0];
  if (kSize) {
    AssignShape(attrs, out, 0, Shape{1}, "output");
    return true;
  }
  if (x.ndim() == 0) return false;  // not even the number of axes is known
  AssignShape(attrs, out, 0, Shape{x.ndim()}, "output");
  return true;
}

bool Int64Output(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  AssignType(attrs, out, 0, DType::kInt64, "output");
  return (*in)[0] != DType::kUnknown;
}

std::vector<NodeEntry> NoGradient(const NodePtr& n, const std::vector<NodeEntry>&) {
  return MakeZeroGradNodes(n);  // the shape does not depend on the values
}

}  // namespace

TS_REGISTER_OP(shape_array)
    .describe(R"(The shape of the input as a 1-D int64 array (MXNet's shape_array).

Example: shape_array(ones((2, 3))) = [2, 3].)")
    .set_num_inputs(1)
    .add_argument("data", "NDArray", "Input array (only its shape is read).")
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data"}))
    .set_attr<FInferShape>("FInferShape", ShapeArrayShape<false>)
    .set_attr<FInferType>("FInferType", Int64Output)
    .set_attr<FCompute>(kFComputeCPU, ShapeArrayCompute<cpu, false>)
    .set_attr<FGradient>("FGradient", NoGradient);

TS_REGISTER_OP(size_array)
    .describe(R"(The number of elements of the input as a one-element int64 array.

Example: size_array(ones((2, 3))) = [6].)")
    .set_num_inputs(1)
    .add_argument("data", "NDArray", "Input array (only its shape is read).")
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data"}))
    .set_attr<FInferShape>("FInferShape", ShapeArrayShape<true>)
    .set_attr<FInferType>("FInferType", Int64Output)
    .set_attr<FCompute>(kFComputeCPU, ShapeArrayCompute<cpu, true>)
    .set_attr<FGradient>("FGradient", NoGradient);

}  // namespace tessera::op
