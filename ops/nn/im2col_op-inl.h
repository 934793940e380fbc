// im2col and col2im (MXNet's): parameters, geometry and element kernels,
// shared by the CPU (im2col_op.cc) and GPU (im2col_op.cu) registrations.
// im2col is a thread per column element (a gather); col2im a thread per
// image element, summing the column elements that cover it in the order of
// the kernel's offsets (the order Col2Im's scatter adds them), so no
// atomics.
#pragma once

#include <vector>

#include "engine/op/float_dispatch.h"
#include "engine/op/kernel_launch.h"
#include "ops/nn/convolution-inl.h"
#include "ops/nn/nn_common.h"
#include "ops/nn/spatial_params.h"

namespace tessera::op {

template <typename P>
inline void DeclarePatchFields(ParamDecl<P>& d) {
  d.field("kernel", &P::kernel).describe("The patch size: (w,), (h, w) or (d, h, w).");
  d.field("stride", &P::stride)
      .set_default(Shape())
      .describe("The step between patches, per spatial axis. Default 1 each.");
  d.field("dilate", &P::dilate)
      .set_default(Shape())
      .describe("The spacing of a patch's elements, per spatial axis. Default 1 each.");
  d.field("pad", &P::pad)
      .set_default(Shape())
      .describe("Zeros added on both sides, per spatial axis. Default 0 each.");
}

struct Im2ColParam : Params<Im2ColParam> {
  Shape kernel, stride, dilate, pad;
  static void Declare(ParamDecl<Im2ColParam>& d) { DeclarePatchFields(d); }
};

struct Col2ImParam : Params<Col2ImParam> {
  Shape kernel, stride, dilate, pad, output_size;
  static void Declare(ParamDecl<Col2ImParam>& d) {
    DeclarePatchFields(d);
    d.field("output_size", &Col2ImParam::output_size)
        .describe("The image's spatial size, with kernel's number of axes.");
  }
};

// The convolution geometry of the image (N, C, spatial...) under the
// patch parameters; errors name the op, the parameter and the shape.
template <typename P>
ConvGeom PatchGeomOf(const NodeAttrs& attrs, const Shape& image) {
  const P& p = ParamsOf<P>(attrs);
  const int sp = p.kernel.ndim();
  TS_CHECK(sp >= 1 && sp <= 3) << OpLabel(attrs) << ": kernel " << p.kernel
                               << " must have 1 to 3 values";
  TS_CHECK(image.ndim() == sp + 2)
      << OpLabel(attrs) << ": the image " << image << " needs " << sp + 2
      << " axes (batch, channel, then kernel's " << sp << ")";
  ConvGeom g;
  g.spatial = sp;
  g.n = image[0];
  g.c = image[1];
  g.f = g.c;
  g.d = sp == 3 ? image[2] : 1;
  g.h = sp >= 2 ? image[sp] : 1;
  g.w = image[sp + 1];
  SpatialTuple3(attrs, "kernel", p.kernel, sp, 1, 1, image, &g.kd, &g.kh, &g.kw);
  SpatialTuple3(attrs, "stride", p.stride, sp, 1, 1, image, &g.sd, &g.sh, &g.sw);
  SpatialTuple3(attrs, "dilate", p.dilate, sp, 1, 1, image, &g.dd, &g.dh, &g.dw);
  SpatialTuple3(attrs, "pad", p.pad, sp, 0, 0, image, &g.pd, &g.ph, &g.pw);
  auto out = [&](int64_t in, int64_t k, int64_t s, int64_t d, int64_t pad) {
    const int64_t span = d * (k - 1) + 1;
    TS_CHECK(in + 2 * pad >= span) << OpLabel(attrs) << ": the kernel " << p.kernel
                                   << " (dilated) exceeds the padded image " << image;
    return (in + 2 * pad - span) / s + 1;
  };
  g.od = out(g.d, g.kd, g.sd, g.dd, g.pd);
  g.oh = out(g.h, g.kh, g.sh, g.dh, g.ph);
  g.ow = out(g.w, g.kw, g.sw, g.dw, g.pw);
  return g;
}

// (N, C * prod(kernel), L).
inline Shape ColumnsOf(const ConvGeom& g) {
  return Shape{g.n, g.c * g.ksize(), g.out_size()};
}

// col2im's image: (N, C, output_size...), C from the columns' rows.
inline Shape ImageOf(const NodeAttrs& attrs, const Shape& col) {
  const auto& p = ParamsOf<Col2ImParam>(attrs);
  TS_CHECK(col.ndim() == 3) << OpLabel(attrs) << ": data has shape " << col
                            << "; it must be (N, C * prod(kernel), L)";
  TS_CHECK(p.output_size.ndim() == p.kernel.ndim())
      << OpLabel(attrs) << ": output_size " << p.output_size << " and kernel " << p.kernel
      << " must have the same number of values";
  const int64_t k = p.kernel.Size();
  TS_CHECK(k > 0 && col[1] % k == 0) << OpLabel(attrs) << ": data " << col << " has " << col[1]
                                     << " rows, not a multiple of prod(kernel) = " << k;
  std::vector<int64_t> dims{col[0], col[1] / k};
  dims.insert(dims.end(), p.output_size.begin(), p.output_size.end());
  const Shape image(dims);
  const ConvGeom g = PatchGeomOf<Col2ImParam>(attrs, image);
  TS_CHECK(ColumnsOf(g) == col) << OpLabel(attrs) << ": data has shape " << col << " but an image "
                                << image << " has " << ColumnsOf(g) << " columns";
  return image;
}

// The sizes the kernels need, by value (ConvGeom's methods are host-only).
struct PatchGeom {
  int64_t c, d, h, w, kd, kh, kw, sd, sh, sw, dd, dh, dw, pd, ph, pw, od, oh, ow;
  TS_XINLINE int64_t ksize() const { return kd * kh * kw; }
  TS_XINLINE int64_t in_size() const { return d * h * w; }
  TS_XINLINE int64_t out_size() const { return od * oh * ow; }
};

inline PatchGeom MakePatchGeom(const ConvGeom& g) {
  return {g.c,  g.d,  g.h,  g.w,  g.kd, g.kh, g.kw, g.sd, g.sh, g.sw,
          g.dd, g.dh, g.dw, g.pd, g.ph, g.pw, g.od, g.oh, g.ow};
}

// Column element i of every image's (C * ksize, L) matrix.
struct Im2ColElem {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, PatchGeom g, const T* img, T* col, OpReqType req) {
    const int64_t L = g.out_size(), rows = g.c * g.ksize();
    const int64_t pos = i % L, row = i / L % rows, b = i / (L * rows);
    const int64_t j = row % g.kw, ii = row / g.kw % g.kh, a = row / (g.kw * g.kh) % g.kd,
                  c = row / g.ksize();
    const int64_t x = pos % g.ow, y = pos / g.ow % g.oh, z = pos / (g.ow * g.oh);
    const int64_t iz = z * g.sd - g.pd + a * g.dd, iy = y * g.sh - g.ph + ii * g.dh,
                  ix = x * g.sw - g.pw + j * g.dw;
    const bool in = iz >= 0 && iz < g.d && iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
    const T v = in ? img[((b * g.c + c) * g.d + iz) * g.h * g.w + iy * g.w + ix] : T(0);
    if (req == kAddTo)
      col[i] += v;
    else
      col[i] = v;
  }
};

// The output position o along an axis whose kernel offset k covers input
// position `in`, or -1.
TS_XINLINE int64_t CoveringPosition(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pad,
                                    int64_t out) {
  const int64_t t = in + pad - k * d;
  if (t < 0 || t % s != 0 || t / s >= out) return -1;
  return t / s;
}

// Image element i: the sum of the column elements that cover it.
struct Col2ImElem {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, PatchGeom g, const T* col, T* img, OpReqType req) {
    const int64_t ix = i % g.w, iy = i / g.w % g.h, iz = i / (g.w * g.h) % g.d,
                  bc = i / g.in_size(), c = bc % g.c, b = bc / g.c;
    const int64_t L = g.out_size();
    const T* cols = col + (b * g.c + c) * g.ksize() * L;
    T sum = T(0);
    for (int64_t a = 0; a < g.kd; ++a) {
      const int64_t z = CoveringPosition(iz, a, g.sd, g.dd, g.pd, g.od);
      if (z < 0) continue;
      for (int64_t ii = 0; ii < g.kh; ++ii) {
        const int64_t y = CoveringPosition(iy, ii, g.sh, g.dh, g.ph, g.oh);
        if (y < 0) continue;
        for (int64_t j = 0; j < g.kw; ++j) {
          const int64_t x = CoveringPosition(ix, j, g.sw, g.dw, g.pw, g.ow);
          if (x < 0) continue;
          sum += cols[((a * g.kh + ii) * g.kw + j) * L + (z * g.oh + y) * g.ow + x];
        }
      }
    }
    if (req == kAddTo)
      img[i] += sum;
    else
      img[i] = sum;
  }
};

// kToColumns: image -> columns (im2col, col2im's backward), else back.
// kImageInput: the image shape is input `kImageInput`'s, else col2im's.
template <typename xpu, typename P, bool kToColumns, int kImageInput>
void PatchCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const Shape image = kImageInput >= 0 ? in[kImageInput].shape() : ImageOf(attrs, in[0].shape());
  const PatchGeom g = MakePatchGeom(PatchGeomOf<P>(attrs, image));
  ForFloatAndDouble(attrs, in[0].dtype(), OpLabel(attrs).c_str(), [&](auto zero) {
    using T = decltype(zero);
    if (kToColumns)
      Kernel<Im2ColElem, xpu>::Launch(ctx.run_ctx, out[0].Size(), g, in[0].dptr<T>(),
                                      out[0].dptr<T>(), req[0]);
    else
      Kernel<Col2ImElem, xpu>::Launch(ctx.run_ctx, out[0].Size(), g, in[0].dptr<T>(),
                                      out[0].dptr<T>(), req[0]);
  });
}

}  // namespace tessera::op
