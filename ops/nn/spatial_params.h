// The spatial parameters of the operators on (batch, channel, [[depth,]
// height,] width) data, 1-D, 2-D or 3-D (Convolution, Deconvolution,
// Pooling): a tuple (w,), (h, w) or (d, h, w) read as a depth, a height and
// a width, lower-dimensional data being seen as 3-D data of depth and height
// one, and the layouts those operators accept. Errors name the op, the
// parameter and the data's shape.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/base/error.h"
#include "engine/op/infer_utils.h"

namespace tessera::op {

// The largest value of a spatial parameter. No kernel, stride or padding is
// near it, and with it the output-size arithmetic (x + 2 * pad,
// dilate * (kernel - 1)) stays far from overflow whatever a caller or a
// file asks for; only the data's own sizes still need checked sums.
inline constexpr int64_t kMaxSpatialParam = (int64_t{1} << 31) - 1;

// The tuple parameter `name` = `s` for `spatial` (1 or 2) dimensions as
// (*h, *w), `fill` on each axis when `s` is empty. In 1-D the height is
// `fill` as well: the neutral value of an axis that is not there, 1 for a
// size or a stride, 0 for a padding. Raises, for data of shape `data`,
// "<op>: parameter 'stride' is (1,1,1), expected 2 value(s) for data of shape (1,3,4,4)"
// or "<op>: parameter 'kernel' is (0,3), every value must be >= 1" (or <= kMaxSpatialParam).
inline void SpatialTuple(const NodeAttrs& attrs, const char* name, const Shape& s, int spatial,
                         int64_t fill, int64_t min, const Shape& data, int64_t* h, int64_t* w) {
  if (s.ndim() == 0) {
    *h = fill;
    *w = fill;
    return;
  }
  TS_CHECK(s.ndim() == spatial) << OpLabel(attrs) << ": parameter '" << name << "' is " << s
                                << ", expected " << spatial << " value(s) for data of shape "
                                << data;
  for (int i = 0; i < spatial; ++i) {
    TS_CHECK(s[i] >= min) << OpLabel(attrs) << ": parameter '" << name << "' is " << s
                          << ", every value must be >= " << min;
    TS_CHECK(s[i] <= kMaxSpatialParam) << OpLabel(attrs) << ": parameter '" << name << "' is " << s
                                       << ", every value must be <= " << kMaxSpatialParam;
  }
  *h = spatial >= 2 ? s[spatial - 2] : fill;
  *w = s[spatial - 1];
}

// SpatialTuple with a depth: `s` for `spatial` (1, 2 or 3) dimensions as
// (*d, *h, *w), `fill` on the axes that are not there.
inline void SpatialTuple3(const NodeAttrs& attrs, const char* name, const Shape& s, int spatial,
                          int64_t fill, int64_t min, const Shape& data, int64_t* d, int64_t* h,
                          int64_t* w) {
  SpatialTuple(attrs, name, s, spatial, fill, min, data, h, w);
  *d = spatial == 3 && s.ndim() == 3 ? s[0] : fill;
}

// The value of a spatial tuple parameter at spatial axis `i` (0-based among
// the spatial axes), `fill` when it is not given, or -1 when it is out of
// range or of the wrong rank (the forward geometry reports those).
inline int64_t TupleAt(const Shape& t, int spatial, int i, int64_t fill, int64_t min) {
  if (t.ndim() == 0) return fill;
  if (t.ndim() != spatial || t[i] < min || t[i] > kMaxSpatialParam) return -1;
  return t[i];
}

// MXNet's shape inference backwards (src/operator/nn/convolution-inl.h),
// for Convolution, Deconvolution and Pooling: the data's batch size comes
// from the output's, and each unknown spatial size from the output's where
// the forward formula has one solution: `in_size(i, out_size)` gives it for
// spatial axis i, or 0 where it cannot be told. Data of unknown rank is
// taken as all unknown, of the output's rank. Returns the data's shape with
// what could be filled.
template <typename InSize>
Shape DataFromOutput(const Shape& data, const Shape& out, InSize in_size) {
  if (out.ndim() < 3 || (data.ndim() != 0 && data.ndim() != out.ndim())) return data;
  Shape d = data.ndim() == 0 ? Shape::Filled(out.ndim()) : data;
  if (d[0] == 0) d[0] = out[0];
  for (int a = 2; a < d.ndim(); ++a)
    if (d[a] == 0 && out[a] > 0) d[a] = in_size(a - 2, out[a]);
  return d;
}

// The input size that a sliding window of (dilated) size `window`, stride 1
// and `pad` on each side turns into `out` (out = in + 2 pad - window + 1),
// for DataFromOutput; raises when no input size gives `out`.
inline int64_t WindowInputSize(const NodeAttrs& attrs, int64_t out, int64_t window, int64_t pad,
                               const Shape& out_shape) {
  const int64_t in = AddDims(out - 1, window, OpLabel(attrs)) - 2 * pad;
  TS_CHECK(in > 0) << OpLabel(attrs) << ": no input gives the output of shape " << out_shape
                   << " (window " << window << ", padding " << pad << ")";
  return in;
}

// A layout parameter, when given, must name the plain layout of `spatial`
// dimensions: 'NCW' or 'NCHW' (the kernels know no other).
inline void CheckSpatialLayout(const NodeAttrs& attrs, const std::optional<std::string>& layout,
                               int spatial) {
  if (!layout) return;
  const char* want = spatial == 1 ? "NCW" : (spatial == 2 ? "NCHW" : "NCDHW");
  TS_CHECK(*layout == want) << OpLabel(attrs) << ": layout '" << *layout
                            << "' is not supported with " << spatial
                            << " spatial dimension(s), expected '" << want << "'";
}

}  // namespace tessera::op
