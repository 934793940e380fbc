// The spatial transformer ops' parameters and element kernels (MXNet's
// GridGenerator, BilinearSampler, SpatialTransformer), shared by the CPU
// (spatial_transformer.cc) and GPU (spatial_transformer.cu) registrations.
// A grid is (N, 2, H, W): x then y, normalised to [-1, 1] across the input
// (-1 the first pixel, 1 the last). Every kernel writes what it alone owns,
// so none needs atomics: the sampler's data gradient is a thread per
// (image, channel) plane, scattering its points in order.
#pragma once

#include <cmath>
#include <optional>
#include <vector>

#include "engine/op/float_dispatch.h"
#include "engine/op/kernel_launch.h"
#include "ops/nn/nn_common.h"

namespace tessera::op {

enum TransformType { kAffine, kWarp };

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

// ---- bilinear taps: the four neighbours of point (x, y) in pixels; taps
// outside the image read 0 (MXNet's rule).

struct Taps {
  int64_t x0, y0;
  double wx, wy;  // the weights of the right and bottom neighbours
};

TS_XINLINE Taps TapsAt(double gx, double gy, int64_t h, int64_t w) {
  const double x = (gx + 1) * double(w - 1) / 2, y = (gy + 1) * double(h - 1) / 2;
  const double fx = floor(x), fy = floor(y);
  return {int64_t(fx), int64_t(fy), x - fx, y - fy};
}

// fn(offset in the plane, weight, d weight / d x, d weight / d y) for the
// taps inside the image.
template <typename F>
TS_XINLINE void ForTaps(const Taps& t, int64_t h, int64_t w, F&& fn) {
  for (int dy = 0; dy < 2; ++dy)
    for (int dx = 0; dx < 2; ++dx) {
      const int64_t x = t.x0 + dx, y = t.y0 + dy;
      if (x < 0 || x >= w || y < 0 || y >= h) continue;
      const double ax = dx ? t.wx : 1 - t.wx, ay = dy ? t.wy : 1 - t.wy;
      fn(y * w + x, ax * ay, (dx ? 1.0 : -1.0) * ay, (dy ? 1.0 : -1.0) * ax);
    }
}

// The sizes of one sampling: data (n, c, h, w), grid (n, 2, oh, ow).
struct SampleGeom {
  int64_t n, c, h, w, op;  // op = oh * ow
};

inline SampleGeom MakeSampleGeom(const Shape& data, const Shape& grid) {
  return {data[0], data[1], data[2], data[3], grid[2] * grid[3]};
}

template <typename T>
TS_XINLINE void StoreReq(T& o, double v, OpReqType req) {
  if (req == kAddTo)
    o = T(double(o) + v);
  else if (req != kNullOp)
    o = T(v);
}

// Output element i = (b, ch, k).
struct SampleForwardKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, SampleGeom g, const T* x, const T* grid, T* y,
                             OpReqType req) {
    const int64_t k = i % g.op, bc = i / g.op, b = bc / g.c;
    const Taps t =
        TapsAt(double(grid[b * 2 * g.op + k]), double(grid[b * 2 * g.op + g.op + k]), g.h, g.w);
    const T* plane = x + bc * g.h * g.w;
    double v = 0;
    ForTaps(t, g.h, g.w,
            [&](int64_t at, double wt, double, double) { v += wt * double(plane[at]); });
    StoreReq(y[i], v, req);
  }
};

// The data gradient of plane bc = (b, ch): its points' output gradients
// spread over their taps, points in order.
struct SampleDataGradKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t bc, SampleGeom g, const T* go, const T* grid, T* dx,
                             OpReqType req) {
    const int64_t b = bc / g.c;
    T* plane = GradPlane(dx, bc, g.h * g.w, req);
    for (int64_t k = 0; k < g.op; ++k) {
      const Taps t =
          TapsAt(double(grid[b * 2 * g.op + k]), double(grid[b * 2 * g.op + g.op + k]), g.h, g.w);
      const double gv = double(go[bc * g.op + k]);
      ForTaps(t, g.h, g.w, [&](int64_t at, double wt, double, double) {
        plane[at] = T(double(plane[at]) + gv * wt);
      });
    }
  }
};

// The grid gradient of point (b, k): summed over the channels.
struct SampleGridGradKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t bk, SampleGeom g, const T* go, const T* x, const T* grid,
                             T* dg, OpReqType req) {
    const int64_t b = bk / g.op, k = bk % g.op;
    const Taps t =
        TapsAt(double(grid[b * 2 * g.op + k]), double(grid[b * 2 * g.op + g.op + k]), g.h, g.w);
    double gx = 0, gy = 0;
    for (int64_t ch = 0; ch < g.c; ++ch) {
      const double gv = double(go[(b * g.c + ch) * g.op + k]);
      const T* plane = x + (b * g.c + ch) * g.h * g.w;
      ForTaps(t, g.h, g.w, [&](int64_t at, double, double dwx, double dwy) {
        gx += gv * dwx * double(plane[at]);
        gy += gv * dwy * double(plane[at]);
      });
    }
    // Pixels per unit of the normalised grid: (size - 1) / 2.
    StoreReq(dg[b * 2 * g.op + k], gx * double(g.w - 1) / 2, req);
    StoreReq(dg[b * 2 * g.op + g.op + k], gy * double(g.h - 1) / 2, req);
  }
};

template <typename xpu, typename T>
void SampleForward(const OpContext& ctx, const TBlob& data, const TBlob& grid, const TBlob& out,
                   OpReqType req) {
  const SampleGeom g = MakeSampleGeom(data.shape(), grid.shape());
  Kernel<SampleForwardKernel, xpu>::Launch(ctx.run_ctx, out.Size(), g, data.dptr<T>(),
                                           grid.dptr<T>(), out.dptr<T>(), req);
}

template <typename xpu, typename T>
void SampleBackward(const OpContext& ctx, const TBlob& og, const TBlob& data, const TBlob& grid,
                    const TBlob& gdata, const TBlob& ggrid, OpReqType req_data,
                    OpReqType req_grid) {
  const SampleGeom g = MakeSampleGeom(data.shape(), grid.shape());
  if (req_data != kNullOp)
    Kernel<SampleDataGradKernel, xpu>::Launch(ctx.run_ctx, g.n * g.c, g, og.dptr<T>(),
                                              grid.dptr<T>(), gdata.dptr<T>(), req_data);
  if (req_grid != kNullOp)
    Kernel<SampleGridGradKernel, xpu>::Launch(ctx.run_ctx, g.n * g.op, g, og.dptr<T>(),
                                              data.dptr<T>(), grid.dptr<T>(), ggrid.dptr<T>(),
                                              req_grid);
}

template <typename xpu>
void SamplerForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  ForFloatAndDouble(attrs, in[0].dtype(), "BilinearSampler", [&](auto zero) {
    SampleForward<xpu, decltype(zero)>(ctx, in[0], in[1], out[0], req[0]);
  });
}

template <typename xpu>
void SamplerBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  ForFloatAndDouble(attrs, in[0].dtype(), "_backward_BilinearSampler", [&](auto zero) {
    SampleBackward<xpu, decltype(zero)>(ctx, in[0], in[1], in[2], out[0], out[1], req[0], req[1]);
  });
}

// ---- GridGenerator

// The normalised coordinate of pixel i of n: -1 + 2 i / (n - 1).
TS_XINLINE double NormCoord(int64_t i, int64_t n) {
  return n > 1 ? -1.0 + 2.0 * double(i) / double(n - 1) : -1.0;
}

// The grid's sizes: (n, 2, h, w), op = h * w.
struct GridGeom {
  int64_t n, h, w, op;
};

// Grid point (b, k) from the affine matrix or the flow.
struct GridForwardKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t bk, GridGeom g, bool affine, const T* src, T* dst,
                             OpReqType req) {
    const int64_t b = bk / g.op, k = bk % g.op;
    T* px = dst + b * 2 * g.op + k;
    if (affine) {
      const T* a = src + b * 6;
      const double xt = NormCoord(k % g.w, g.w), yt = NormCoord(k / g.w, g.h);
      StoreReq(px[0], double(a[0]) * xt + double(a[1]) * yt + double(a[2]), req);
      StoreReq(px[g.op], double(a[3]) * xt + double(a[4]) * yt + double(a[5]), req);
    } else {  // warp: grid = (pixel + flow) / ((size - 1) / 2) - 1
      const double sx = g.w > 1 ? 2.0 / double(g.w - 1) : 0,
                   sy = g.h > 1 ? 2.0 / double(g.h - 1) : 0;
      const T* f = src + b * 2 * g.op + k;
      StoreReq(px[0], (double(k % g.w) + double(f[0])) * sx - 1, req);
      StoreReq(px[g.op], (double(k / g.w) + double(f[g.op])) * sy - 1, req);
    }
  }
};

// Affine: entry r of image b's matrix gradient, summed over the grid.
struct GridAffineGradKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t br, GridGeom g, const T* dgrid, T* da, OpReqType req) {
    const int64_t b = br / 6, r = br % 6;
    const T* d = dgrid + b * 2 * g.op + (r < 3 ? 0 : g.op);
    double s = 0;
    for (int64_t k = 0; k < g.op; ++k) {
      const double in =
          r % 3 == 0 ? NormCoord(k % g.w, g.w) : (r % 3 == 1 ? NormCoord(k / g.w, g.h) : 1.0);
      s += double(d[k]) * in;
    }
    StoreReq(da[br], s, req);
  }
};

// Warp: the flow's gradient at (b, k), the transpose of the scaling.
struct GridWarpGradKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t bk, GridGeom g, const T* dgrid, T* dflow, OpReqType req) {
    const int64_t b = bk / g.op, k = bk % g.op, at = b * 2 * g.op + k;
    const double sx = g.w > 1 ? 2.0 / double(g.w - 1) : 0, sy = g.h > 1 ? 2.0 / double(g.h - 1) : 0;
    StoreReq(dflow[at], double(dgrid[at]) * sx, req);
    StoreReq(dflow[at + g.op], double(dgrid[at + g.op]) * sy, req);
  }
};

// kForward: data -> grid; else dgrid -> ddata (the transpose map).
template <typename xpu, bool kForward>
void GridCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const bool affine = ParamsOf<GridParam>(attrs).transform_type == kAffine;
  const Shape& gs = kForward ? out[0].shape() : in[0].shape();  // the grid's shape
  const GridGeom g{gs[0], gs[2], gs[3], gs[2] * gs[3]};
  ForFloatAndDouble(attrs, in[0].dtype(), "GridGenerator", [&](auto zero) {
    using T = decltype(zero);
    const T* src = in[0].dptr<T>();
    T* dst = out[0].dptr<T>();
    if (kForward)
      Kernel<GridForwardKernel, xpu>::Launch(ctx.run_ctx, g.n * g.op, g, affine, src, dst, req[0]);
    else if (affine)
      Kernel<GridAffineGradKernel, xpu>::Launch(ctx.run_ctx, g.n * 6, g, src, dst, req[0]);
    else
      Kernel<GridWarpGradKernel, xpu>::Launch(ctx.run_ctx, g.n * g.op, g, src, dst, req[0]);
  });
}

// ---- SpatialTransformer: GridGenerator (affine) then BilinearSampler, the
// grid (and its gradient) in the op's temp space.

NodeAttrs GridAttrsOf(const NodeAttrs& attrs);

template <typename xpu>
void TransformerForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const NodeAttrs g = GridAttrsOf(attrs);
  const Shape gs{in[0].shape()[0], 2, out[0].shape()[2], out[0].shape()[3]};
  ForFloatAndDouble(attrs, in[0].dtype(), "SpatialTransformer", [&](auto zero) {
    using T = decltype(zero);
    T* grid = ctx.requested.at(0).get_space_typed<T>(size_t(gs.Size()));
    const TBlob gb(grid, gs, in[0].dtype(), in[0].ctx());
    GridCompute<xpu, true>(g, ctx, {in[1]}, {kWriteTo}, {gb});
    SampleForward<xpu, T>(ctx, in[0], gb, out[0], req[0]);
  });
}

// in dOut, data, loc -> d data, d loc (through the grid).
template <typename xpu>
void TransformerBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                         const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const NodeAttrs g = GridAttrsOf(attrs);
  const Shape gs{in[1].shape()[0], 2, in[0].shape()[2], in[0].shape()[3]};
  ForFloatAndDouble(attrs, in[0].dtype(), "_backward_SpatialTransformer", [&](auto zero) {
    using T = decltype(zero);
    T* grid = ctx.requested.at(0).get_space_typed<T>(size_t(2 * gs.Size()));
    const TBlob gb(grid, gs, in[0].dtype(), in[0].ctx());
    const TBlob dgb(grid + gs.Size(), gs, in[0].dtype(), in[0].ctx());
    GridCompute<xpu, true>(g, ctx, {in[2]}, {kWriteTo}, {gb});
    SampleBackward<xpu, T>(ctx, in[0], in[1], gb, out[0], dgb, req[0],
                           req[1] != kNullOp ? kWriteTo : kNullOp);
    GridCompute<xpu, false>(g, ctx, {dgb}, {req[1]}, {out[1]});
  });
}

}  // namespace tessera::op
