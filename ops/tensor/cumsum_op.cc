// cumsum (MXNet's _np_cumsum): running sums along an axis, or over the
// flattened array; its gradient is the running sum of the output gradient
// taken from the other end. Kernels in cumsum_op-inl.h.
#include "ops/tensor/cumsum_op-inl.h"
#include "ops/tensor/unary_backward_shape.h"

namespace tessera::op {
namespace {

bool CumsumShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& s = (*in)[0];
  if (!s.known()) return false;
  GeometryOf(attrs, s);  // checks the axis
  AssignShape(attrs, out, 0, ParamsOf<CumsumParam>(attrs).axis ? s : Shape{s.Size()}, "output");
  return true;
}

bool CumsumType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const DType t = (*in)[0];
  if (t == DType::kUnknown) return false;
  const auto& p = ParamsOf<CumsumParam>(attrs);
  AssignType(attrs, out, 0, p.dtype ? *p.dtype : (t == DType::kBool ? DType::kInt64 : t), "output");
  TS_CHECK((*out)[0] != DType::kBool) << OpLabel(attrs) << ": dtype bool cannot hold sums";
  return true;
}

}  // namespace

TS_REGISTER_OP(_np_cumsum)
    .describe(R"(Running sums along `axis` (MXNet's cumsum, as NumPy's): element i
is the sum of elements 0..i. With axis None (the default), over the flattened
array, giving a 1-D result. The sums are kept in the result's dtype (`dtype`,
else the input's; bool gives int64).

Example: cumsum([[1, 2, 3], [4, 5, 6]]) = [1, 3, 6, 10, 15, 21];
cumsum(same, axis=1) = [[1, 3, 6], [4, 9, 15]] (Lua axis 2).)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<CumsumParam>)
    .add_alias("cumsum")
    .add_argument("a", "NDArray", "The input array.")
    .add_arguments(CumsumParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"a"}))
    .set_attr<FInferShape>("FInferShape", CumsumShape)
    .set_attr<FInferType>("FInferType", CumsumType)
    .set_attr<FCompute>(kFComputeCPU, CumsumCompute<cpu, false>)
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_np_cumsum"});

TS_REGISTER_OP(_backward_np_cumsum)
    .describe(
        "Gradient of cumsum: the running sums of the output gradient (input 0) taken from the "
        "end, shaped as the forward input (input 1).")
    .set_num_inputs(2)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<CumsumParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", UnaryBackwardShape(CumsumShape))
    .set_attr<FInferType>("FInferType",
                          [](const NodeAttrs& attrs, std::vector<DType>* in,
                             std::vector<DType>* out) {
                            if ((*in)[1] == DType::kUnknown) return false;
                            AssignType(attrs, out, 0, (*in)[1], "gradient");
                            return (*in)[0] != DType::kUnknown;
                          })
    .set_attr<FCompute>(kFComputeCPU, CumsumCompute<cpu, true>);

}  // namespace tessera::op
