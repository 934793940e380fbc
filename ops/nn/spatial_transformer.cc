// Sampling images on a grid (MXNet's spatial transformer ops): shapes and
// registration; the kernels are in spatial_transformer-inl.h.
#include <string>
#include <vector>

#include "ops/nn/spatial_transformer-inl.h"

namespace tessera::op {

NodeAttrs GridAttrsOf(const NodeAttrs& attrs) {
  const auto& p = ParamsOf<SpatialTransformerParam>(attrs);
  NodeAttrs g;
  g.op = Op::Get("GridGenerator");
  g.name = attrs.name;
  g.dict = {{"transform_type", "affine"},
            {"target_shape",
             "(" + std::to_string(p.target_shape.ndim() > 0 ? p.target_shape[0] : 0) + "," +
                 std::to_string(p.target_shape.ndim() > 1 ? p.target_shape[1] : 0) + ")"}};
  g.op->ParseAttrs(&g);
  return g;
}

namespace {

bool SamplerShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &d = (*in)[0], &g = (*in)[1];
  if (!d.known() || !g.known()) return false;
  TS_CHECK(d.ndim() == 4) << OpLabel(attrs) << ": data has shape " << d << "; it must be NCHW";
  TS_CHECK(g.ndim() == 4 && g[0] == d[0] && g[1] == 2)
      << OpLabel(attrs) << ": grid has shape " << g << "; it must be (" << d[0]
      << ", 2, height, width)";
  AssignShape(attrs, out, 0, Shape{d[0], d[1], g[2], g[3]}, "output");
  return true;
}

bool GridShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = ParamsOf<GridParam>(attrs);
  const Shape& d = (*in)[0];
  if (!d.known()) return false;
  if (p.transform_type == kAffine) {
    TS_CHECK(d.ndim() == 2 && d[1] == 6)
        << OpLabel(attrs) << ": data has shape " << d << "; affine needs (N, 6)";
    TS_CHECK(p.target_shape.ndim() == 2 && p.target_shape[0] >= 1 && p.target_shape[1] >= 1)
        << OpLabel(attrs) << ": target_shape " << p.target_shape
        << " must be (height, width) >= 1 for affine";
    AssignShape(attrs, out, 0, Shape{d[0], 2, p.target_shape[0], p.target_shape[1]}, "output");
  } else {
    TS_CHECK(d.ndim() == 4 && d[1] == 2)
        << OpLabel(attrs) << ": data has shape " << d << "; warp needs a flow (N, 2, H, W)";
    AssignShape(attrs, out, 0, d, "output");
  }
  return true;
}

bool TransformerShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &d = (*in)[0], &loc = (*in)[1];
  if (!d.known() || !loc.known()) return false;
  const NodeAttrs g = GridAttrsOf(attrs);
  std::vector<Shape> gin{loc}, gout(1);
  GridShape(g, &gin, &gout);
  std::vector<Shape> sin{d, gout[0]};
  return SamplerShape(attrs, &sin, out);
}

// The grid of SpatialTransformer (and its gradient) lives in temp space.
std::vector<ResourceRequest> TempSpace(const NodeAttrs&) {
  return {ResourceRequest::kTempSpace};
}

}  // namespace

TS_REGISTER_OP(BilinearSampler)
    .describe(R"(Samples NCHW data at the points of a grid (MXNet's
BilinearSampler): grid (N, 2, H', W') holds x then y, normalised so that -1
is the first pixel and 1 the last; the output (N, C, H', W') interpolates
bilinearly, reading 0 outside the image. Gradients reach the data and the
grid.)")
    .set_num_inputs(2)
    .add_argument("data", "NDArray", "Images, NCHW.")
    .add_argument("grid", "NDArray", "Sampling points, (N, 2, H', W').")
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data", "grid"}))
    .set_attr<FInferShape>("FInferShape", SamplerShape)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, SamplerForward<cpu>)
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_BilinearSampler"});

TS_REGISTER_OP(_backward_BilinearSampler)
    .describe("Gradient of BilinearSampler: inputs dOut, data, grid; outputs d data, d grid.")
    .set_num_inputs(3)
    .set_num_outputs(2)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& attrs, std::vector<Shape>* in,
                              std::vector<Shape>* out) {
                             std::vector<Shape> fin{(*in)[1], (*in)[2]}, fout(1);
                             if (!SamplerShape(attrs, &fin, &fout)) return false;
                             AssignShape(attrs, in, 0, fout[0], "output gradient");
                             AssignShape(attrs, out, 0, fin[0], "gradient of data");
                             AssignShape(attrs, out, 1, fin[1], "gradient of grid");
                             return true;
                           })
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, SamplerBackward<cpu>);

TS_REGISTER_OP(GridGenerator)
    .describe(R"(A sampling grid for BilinearSampler (MXNet's GridGenerator): with
'affine', data (N, 6) is a 2 x 3 matrix A per image and the grid at pixel
(i, j) of target_shape is A [x_t, y_t, 1], (x_t, y_t) the pixel normalised to
[-1, 1]; with 'warp', data (N, 2, H, W) is a flow in pixels and the grid is
(pixel + flow) normalised. Output (N, 2, H, W): x then y.)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<GridParam>)
    .add_argument("data", "NDArray", "Affine matrices (N, 6) or a flow (N, 2, H, W).")
    .add_arguments(GridParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataInputName)
    .set_attr<FInferShape>("FInferShape", GridShape)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, GridCompute<cpu, true>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      return MakeGradNode("_backward_GridGenerator", n, {og[0], n->inputs[0]});
    });

TS_REGISTER_OP(_backward_GridGenerator)
    .describe("Gradient of GridGenerator: inputs dgrid, data; output d data.")
    .set_num_inputs(2)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<GridParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& attrs, std::vector<Shape>* in,
                              std::vector<Shape>* out) {
                             std::vector<Shape> fin{(*in)[1]}, fout(1);
                             if (!GridShape(attrs, &fin, &fout)) return false;
                             AssignShape(attrs, in, 0, fout[0], "output gradient");
                             AssignShape(attrs, out, 0, fin[0], "gradient");
                             return true;
                           })
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FCompute>(kFComputeCPU, GridCompute<cpu, false>);

TS_REGISTER_OP(SpatialTransformer)
    .describe(R"(A spatial transformer (MXNet's SpatialTransformer, Jaderberg et
al.): the data sampled bilinearly on the grid that the affine transforms loc
(N, 6) give over target_shape: BilinearSampler(data, GridGenerator(loc)).
Output (N, C, target_shape). Gradients reach the data and loc.)")
    .set_num_inputs(2)
    .set_attr_parser(ParamParser<SpatialTransformerParam>)
    .add_argument("data", "NDArray", "Images, NCHW.")
    .add_argument("loc", "NDArray", "Affine transforms, (N, 6).")
    .add_arguments(SpatialTransformerParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data", "loc"}))
    .set_attr<FInferShape>("FInferShape", TransformerShape)
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FResourceRequest>("FResourceRequest", TempSpace)
    .set_attr<FCompute>(kFComputeCPU, TransformerForward<cpu>)
    .set_attr<FGradient>("FGradient", ElemwiseGradUseIn{"_backward_SpatialTransformer"});

TS_REGISTER_OP(_backward_SpatialTransformer)
    .describe("Gradient of SpatialTransformer: inputs dOut, data, loc; outputs d data, d loc.")
    .set_num_inputs(3)
    .set_num_outputs(2)
    .set_attr_parser(ParamParser<SpatialTransformerParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& attrs, std::vector<Shape>* in,
                              std::vector<Shape>* out) {
                             std::vector<Shape> fin{(*in)[1], (*in)[2]}, fout(1);
                             if (!TransformerShape(attrs, &fin, &fout)) return false;
                             AssignShape(attrs, in, 0, fout[0], "output gradient");
                             AssignShape(attrs, out, 0, fin[0], "gradient of data");
                             AssignShape(attrs, out, 1, fin[1], "gradient of loc");
                             return true;
                           })
    .set_attr<FInferType>("FInferType", FloatSameType)
    .set_attr<FResourceRequest>("FResourceRequest", TempSpace)
    .set_attr<FCompute>(kFComputeCPU, TransformerBackward<cpu>);

}  // namespace tessera::op
