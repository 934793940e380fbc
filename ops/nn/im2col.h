// Im2Col and its adjoint Col2Im on one image of (channels, [[depth,]
// height,] width) data, for the geometry of a convolution (ConvGeom): the
// reference convolution kernels (convolution.cc), the batched GEMM kernels
// (convolution_gemm.cc) and the im2col / col2im operators (im2col_op.cc)
// share them. `ld` is the distance between two rows of col: out_size() for
// one image's matrix, more when several images sit side by side in one.
#pragma once

#include "ops/nn/convolution-inl.h"

namespace tessera::op {

// Calls fn(c, a, i, j, r) for each row r = ((c * kd + a) * kh + i) * kw + j
// of col: channel c of the group seen through the kernel's tap (a, i, j).
template <typename Fn>
inline void ForEachColRow(const ConvGeom& g, Fn&& fn) {
  const int64_t cg = g.cg();
  for (int64_t c = 0; c < cg; ++c)
    for (int64_t a = 0; a < g.kd; ++a)
      for (int64_t i = 0; i < g.kh; ++i)
        for (int64_t j = 0; j < g.kw; ++j) fn(c, a, i, j, ((c * g.kd + a) * g.kh + i) * g.kw + j);
}

// col[((c * kd + a) * kh + i) * kw + j][(z * oh + y) * ow + x] =  (row stride ld)
//   data[c][z*sd - pd + a*dd][y*sh - ph + i*dh][x*sw - pw + j*dw], 0 outside.
// 1-D and 2-D data have depth (and height) one: the outer loops run once.
template <typename T>
inline void Im2Col(const ConvGeom& g, const T* data, T* col, int64_t ld = -1) {
  const int64_t hw = g.h * g.w;
  if (ld < 0) ld = g.out_size();
  ForEachColRow(g, [&](int64_t c, int64_t a, int64_t i, int64_t j, int64_t r) {
    T* row = col + r * ld;
    for (int64_t z = 0; z < g.od; ++z) {
      const int64_t iz = z * g.sd - g.pd + a * g.dd;
      const bool z_in = iz >= 0 && iz < g.d;
      const T* plane = data + (c * g.d + (z_in ? iz : 0)) * hw;
      T* orow = row + z * g.oh * g.ow;
      for (int64_t y = 0; y < g.oh; ++y) {
        const int64_t iy = y * g.sh - g.ph + i * g.dh;
        for (int64_t x = 0; x < g.ow; ++x) {
          const int64_t ix = x * g.sw - g.pw + j * g.dw;
          orow[y * g.ow + x] =
              (z_in && iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) ? plane[iy * g.w + ix] : T(0);
        }
      }
    }
  });
}

// The adjoint: adds col back into data.
template <typename T>
inline void Col2Im(const ConvGeom& g, const T* col, T* data, int64_t ld = -1) {
  const int64_t hw = g.h * g.w;
  if (ld < 0) ld = g.out_size();
  ForEachColRow(g, [&](int64_t c, int64_t a, int64_t i, int64_t j, int64_t r) {
    const T* row = col + r * ld;
    for (int64_t z = 0; z < g.od; ++z) {
      const int64_t iz = z * g.sd - g.pd + a * g.dd;
      if (iz < 0 || iz >= g.d) continue;
      T* plane = data + (c * g.d + iz) * hw;
      const T* orow = row + z * g.oh * g.ow;
      for (int64_t y = 0; y < g.oh; ++y) {
        const int64_t iy = y * g.sh - g.ph + i * g.dh;
        if (iy < 0 || iy >= g.h) continue;
        for (int64_t x = 0; x < g.ow; ++x) {
          const int64_t ix = x * g.sw - g.pw + j * g.dw;
          if (ix >= 0 && ix < g.w) plane[iy * g.w + ix] += orow[y * g.ow + x];
        }
      }
    }
  });
}

}  // namespace tessera::op
