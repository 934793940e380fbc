#include "ops/tensor/depth_space_op-inl.h"

namespace tessera::op {
namespace {

template <bool kToSpace>
bool DepthSpaceShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 1 && out->size() == 1) << OpLabel(attrs) << ": expects 1 input";
  const Shape& x = (*in)[0];
  if (!x.known()) return false;
  const std::string label = OpLabel(attrs);
  TS_CHECK(x.ndim() == 4) << label << ": the input must have 4 axes (N, C, H, W), got " << x;
  const int64_t b = ParamsOf<BlockSizeParam>(attrs).block_size;
  if (kToSpace) {
    TS_CHECK(x[1] % (b * b) == 0) << label << ": the channels of " << x
                                  << " are not a multiple of block_size^2 = " << b * b;
    AssignShape(attrs, out, 0, Shape{x[0], x[1] / (b * b), x[2] * b, x[3] * b}, "output");
  } else {
    TS_CHECK(x[2] % b == 0 && x[3] % b == 0)
        << label << ": the height and width of " << x << " are not multiples of block_size " << b;
    AssignShape(attrs, out, 0, Shape{x[0], x[1] * b * b, x[2] / b, x[3] / b}, "output");
  }
  return true;
}

// Each op's gradient is the other op on the output gradient.
template <bool kToSpace>
std::vector<NodeEntry> DepthSpaceGrad(const NodePtr& n, const std::vector<NodeEntry>& og) {
  return {MakeNode(kToSpace ? "space_to_depth" : "depth_to_space", n->attrs.name + "_backward",
                   {og[0]}, n->attrs.dict)};
}

}  // namespace

TS_REGISTER_OP(depth_to_space)
    .describe(R"(Moves blocks of block_size^2 channels into block_size x block_size
pixels: (N, C, H, W) -> (N, C / b^2, H b, W b), MXNet's depth_to_space:
out[n, c, h b + i, w b + j] = in[n, (i b + j) C/b^2 + c, h, w].

Example: depth_to_space of shape (1, 4, 1, 1) holding [0, 1, 2, 3], block_size=2,
= [[[[0, 1], [2, 3]]]].)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<BlockSizeParam>)
    .add_argument("data", "NDArray", "Input array (N, C, H, W).")
    .add_arguments(BlockSizeParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data"}))
    .set_attr<FInferShape>("FInferShape", DepthSpaceShape<true>)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
    .set_attr<FCompute>(kFComputeCPU, DepthSpaceCompute<cpu, true>)
    .set_attr<FGradient>("FGradient", DepthSpaceGrad<true>);

TS_REGISTER_OP(space_to_depth)
    .describe(R"(Moves block_size x block_size pixels into channels: (N, C, H, W) ->
(N, C b^2, H / b, W / b), the inverse of depth_to_space:
out[n, (i b + j) C + c, h, w] = in[n, c, h b + i, w b + j].

Example: space_to_depth([[[[0, 1], [2, 3]]]], block_size=2) has shape (1, 4, 1, 1)
and holds [0, 1, 2, 3].)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<BlockSizeParam>)
    .add_argument("data", "NDArray", "Input array (N, C, H, W).")
    .add_arguments(BlockSizeParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data"}))
    .set_attr<FInferShape>("FInferShape", DepthSpaceShape<false>)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
    .set_attr<FCompute>(kFComputeCPU, DepthSpaceCompute<cpu, false>)
    .set_attr<FGradient>("FGradient", DepthSpaceGrad<false>);

}  // namespace tessera::op
