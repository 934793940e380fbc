// Sampling images on a grid (MXNet's spatial transformer ops):
// GridGenerator makes a sampling grid from an affine transform or a flow
// field, BilinearSampler samples NCHW data at a grid's points, and
// SpatialTransformer is the two together. A grid is (N, 2, H, W): x then y,
// normalised to [-1, 1] across the input (-1 the first pixel, 1 the last).
#include <cmath>
#include <optional>
#include <vector>

#include "ops/nn/nn_common.h"

namespace tessera::op {
namespace {

enum TransformType { kAffine, kWarp };

// ---------------------------------------------------------------------------
// Bilinear sampling: the four taps of point (x, y) in pixels; taps outside
// the image read 0 (MXNet's rule).

struct Taps {
  int64_t x0, y0;
  double wx, wy;  // the weights of the right and bottom neighbours
};

Taps TapsAt(double gx, double gy, int64_t h, int64_t w) {
  const double x = (gx + 1) * double(w - 1) / 2, y = (gy + 1) * double(h - 1) / 2;
  const double fx = std::floor(x), fy = std::floor(y);
  return {int64_t(fx), int64_t(fy), x - fx, y - fy};
}

// fn(offset in the plane, weight, d weight / d x, d weight / d y) for the
// taps inside the image.
template <typename F>
void ForTaps(const Taps& t, int64_t h, int64_t w, F&& fn) {
  for (int dy = 0; dy < 2; ++dy)
    for (int dx = 0; dx < 2; ++dx) {
      const int64_t x = t.x0 + dx, y = t.y0 + dy;
      if (x < 0 || x >= w || y < 0 || y >= h) continue;
      const double ax = dx ? t.wx : 1 - t.wx, ay = dy ? t.wy : 1 - t.wy;
      fn(y * w + x, ax * ay, (dx ? 1.0 : -1.0) * ay, (dy ? 1.0 : -1.0) * ax);
    }
}

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

// in data, grid -> out.
template <typename T>
void SampleForward(const TBlob& data, const TBlob& grid, const TBlob& out, OpReqType req) {
  const Shape& d = data.shape();
  const int64_t n = d[0], c = d[1], h = d[2], w = d[3], oh = grid.shape()[2], ow = grid.shape()[3],
                op = oh * ow;
  const T* x = data.dptr<T>();
  const T* g = grid.dptr<T>();
  T* y = out.dptr<T>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t k = 0; k < op; ++k) {
      const Taps t = TapsAt(double(g[b * 2 * op + k]), double(g[b * 2 * op + op + k]), h, w);
      for (int64_t ch = 0; ch < c; ++ch) {
        const T* plane = x + (b * c + ch) * h * w;
        double v = 0;
        ForTaps(t, h, w,
                [&](int64_t at, double wt, double, double) { v += wt * double(plane[at]); });
        T& o = y[(b * c + ch) * op + k];
        o = req == kAddTo ? T(double(o) + v) : T(v);
      }
    }
}

// in dOut, data, grid -> d data, d grid.
template <typename T>
void SampleBackward(const TBlob& og, const TBlob& data, const TBlob& grid, const TBlob& gdata,
                    const TBlob& ggrid, OpReqType req_data, OpReqType req_grid) {
  const Shape& d = data.shape();
  const int64_t n = d[0], c = d[1], h = d[2], w = d[3], oh = grid.shape()[2], ow = grid.shape()[3],
                op = oh * ow;
  const T* go = og.dptr<T>();
  const T* x = data.dptr<T>();
  const T* g = grid.dptr<T>();
  T* dx = gdata.dptr<T>();
  T* dg = ggrid.dptr<T>();
  if (req_data != kNullOp && req_data != kAddTo) std::fill(dx, dx + data.Size(), T(0));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t k = 0; k < op; ++k) {
      const Taps t = TapsAt(double(g[b * 2 * op + k]), double(g[b * 2 * op + op + k]), h, w);
      double gx = 0, gy = 0;
      for (int64_t ch = 0; ch < c; ++ch) {
        const double gv = double(go[(b * c + ch) * op + k]);
        const int64_t base = (b * c + ch) * h * w;
        ForTaps(t, h, w, [&](int64_t at, double wt, double dwx, double dwy) {
          if (req_data != kNullOp) dx[base + at] = T(double(dx[base + at]) + gv * wt);
          gx += gv * dwx * double(x[base + at]);
          gy += gv * dwy * double(x[base + at]);
        });
      }
      // Pixels per unit of the normalised grid: (size - 1) / 2.
      const double sx = double(w - 1) / 2, sy = double(h - 1) / 2;
      T* px = dg + b * 2 * op + k;
      T* py = px + op;
      if (req_grid == kAddTo) {
        *px = T(double(*px) + gx * sx);
        *py = T(double(*py) + gy * sy);
      } else if (req_grid != kNullOp) {
        *px = T(gx * sx);
        *py = T(gy * sy);
      }
    }
}

void SamplerForward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  ForFloatAndDouble(attrs, in[0].dtype(), "BilinearSampler", [&](auto zero) {
    SampleForward<decltype(zero)>(in[0], in[1], out[0], req[0]);
  });
}

void SamplerBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  ForFloatAndDouble(attrs, in[0].dtype(), "_backward_BilinearSampler", [&](auto zero) {
    SampleBackward<decltype(zero)>(in[0], in[1], in[2], out[0], out[1], req[0], req[1]);
  });
}

// ---------------------------------------------------------------------------
// GridGenerator

struct GridParam : Params<GridParam> {
  int transform_type = kAffine;
  Shape target_shape = Shape{0, 0};
  static void Declare(ParamDecl<GridParam>& d) {
    d.field("transform_type", &GridParam::transform_type)
        .add_enum("affine", kAffine)
        .add_enum("warp", kWarp)
        .describe(
            "affine: data (N, 6) is a 2 x 3 matrix per image; warp: data (N, 2, H, W) is a "
            "flow field in pixels.");
    d.field("target_shape", &GridParam::target_shape)
        .set_default(Shape{0, 0})
        .describe("The grid's (height, width), for affine.");
  }
};

// The normalised coordinate of pixel i of n: -1 + 2 i / (n - 1).
double Norm(int64_t i, int64_t n) {
  return n > 1 ? -1.0 + 2.0 * double(i) / double(n - 1) : -1.0;
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

// kForward: data -> grid; else dgrid -> ddata (the transpose map).
template <bool kForward>
void GridCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const bool affine = ParamsOf<GridParam>(attrs).transform_type == kAffine;
  const Shape& gs = kForward ? out[0].shape() : in[0].shape();  // the grid's shape
  const int64_t n = gs[0], h = gs[2], w = gs[3], op = h * w;
  ForFloatAndDouble(attrs, in[0].dtype(), "GridGenerator", [&](auto zero) {
    using T = decltype(zero);
    const T* src = in[0].dptr<T>();
    T* dst = out[0].dptr<T>();
    const bool add = req[0] == kAddTo;
    auto put = [&](T& o, double v) { o = add ? T(double(o) + v) : T(v); };
    for (int64_t b = 0; b < n; ++b) {
      if (affine) {
        const T* a = kForward ? src + b * 6 : nullptr;
        double da[6] = {0, 0, 0, 0, 0, 0};
        for (int64_t i = 0; i < h; ++i)
          for (int64_t j = 0; j < w; ++j) {
            const double xt = Norm(j, w), yt = Norm(i, h);
            const int64_t k = i * w + j;
            if (kForward) {
              put(dst[b * 2 * op + k], double(a[0]) * xt + double(a[1]) * yt + double(a[2]));
              put(dst[b * 2 * op + op + k], double(a[3]) * xt + double(a[4]) * yt + double(a[5]));
            } else {
              const double gx = double(src[b * 2 * op + k]), gy = double(src[b * 2 * op + op + k]);
              const double row[3] = {xt, yt, 1};
              for (int r = 0; r < 3; ++r) {
                da[r] += gx * row[r];
                da[3 + r] += gy * row[r];
              }
            }
          }
        if (!kForward)
          for (int r = 0; r < 6; ++r) put(dst[b * 6 + r], da[r]);
      } else {
        // warp: grid = (pixel + flow) / ((size - 1) / 2) - 1.
        const double sx = w > 1 ? 2.0 / double(w - 1) : 0, sy = h > 1 ? 2.0 / double(h - 1) : 0;
        for (int64_t k = 0; k < op; ++k) {
          const T* fx = src + b * 2 * op + k;
          if (kForward) {
            put(dst[b * 2 * op + k], (double(k % w) + double(fx[0])) * sx - 1);
            put(dst[b * 2 * op + op + k], (double(k / w) + double(fx[op])) * sy - 1);
          } else {
            put(dst[b * 2 * op + k], double(fx[0]) * sx);
            put(dst[b * 2 * op + op + k], double(fx[op]) * sy);
          }
        }
      }
    }
  });
}

// ---------------------------------------------------------------------------
// SpatialTransformer: GridGenerator (affine) then BilinearSampler.

struct SpatialTransformerParam : Params<SpatialTransformerParam> {
  Shape target_shape = Shape{0, 0};
  int transform_type = kAffine, sampler_type = 0;
  std::optional<bool> cudnn_off;
  static void Declare(ParamDecl<SpatialTransformerParam>& d) {
    d.field("target_shape", &SpatialTransformerParam::target_shape)
        .set_default(Shape{0, 0})
        .describe("The output's (height, width).");
    d.field("transform_type", &SpatialTransformerParam::transform_type)
        .add_enum("affine", kAffine)
        .describe("The transform: affine (loc is (N, 6)).");
    d.field("sampler_type", &SpatialTransformerParam::sampler_type)
        .add_enum("bilinear", 0)
        .describe("The sampler: bilinear.");
    d.field("cudnn_off", &SpatialTransformerParam::cudnn_off)
        .set_default(std::nullopt)
        .describe("Accepted for MXNet's files (no cuDNN path here).");
  }
};

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

bool TransformerShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &d = (*in)[0], &loc = (*in)[1];
  if (!d.known() || !loc.known()) return false;
  const NodeAttrs g = GridAttrsOf(attrs);
  std::vector<Shape> gin{loc}, gout(1);
  GridShape(g, &gin, &gout);
  std::vector<Shape> sin{d, gout[0]};
  return SamplerShape(attrs, &sin, out);
}

// out = sample(data, grid(loc)); the grid kept in a scratch array.
void TransformerForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const NodeAttrs g = GridAttrsOf(attrs);
  const Shape gs{in[0].shape()[0], 2, out[0].shape()[2], out[0].shape()[3]};
  ForFloatAndDouble(attrs, in[0].dtype(), "SpatialTransformer", [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> grid(size_t(gs.Size()));
    const TBlob gb(grid.data(), gs, in[0].dtype(), in[0].ctx());
    GridCompute<true>(g, ctx, {in[1]}, {kWriteTo}, {gb});
    SampleForward<T>(in[0], gb, out[0], req[0]);
  });
}

// in dOut, data, loc -> d data, d loc (through the grid).
void TransformerBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                         const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const NodeAttrs g = GridAttrsOf(attrs);
  const Shape gs{in[1].shape()[0], 2, in[0].shape()[2], in[0].shape()[3]};
  ForFloatAndDouble(attrs, in[0].dtype(), "_backward_SpatialTransformer", [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> grid(size_t(gs.Size())), dgrid(size_t(gs.Size()));
    const TBlob gb(grid.data(), gs, in[0].dtype(), in[0].ctx());
    const TBlob dgb(dgrid.data(), gs, in[0].dtype(), in[0].ctx());
    GridCompute<true>(g, ctx, {in[2]}, {kWriteTo}, {gb});
    SampleBackward<T>(in[0], in[1], gb, out[0], dgb, req[0], kWriteTo);
    GridCompute<false>(g, ctx, {dgb}, {req[1]}, {out[1]});
  });
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
    .set_attr<FCompute>(kFComputeCPU, SamplerForward)
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
    .set_attr<FCompute>(kFComputeCPU, SamplerBackward);

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
    .set_attr<FCompute>(kFComputeCPU, GridCompute<true>)
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
    .set_attr<FCompute>(kFComputeCPU, GridCompute<false>);

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
    .set_attr<FCompute>(kFComputeCPU, TransformerForward)
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
    .set_attr<FCompute>(kFComputeCPU, TransformerBackward);

}  // namespace tessera::op
