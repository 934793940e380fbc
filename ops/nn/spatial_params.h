// The spatial parameters of the operators on (batch, channel, [height,]
// width) data, 1-D or 2-D (Convolution, Deconvolution, Pooling): a tuple
// (w,) or (h, w) read as a height and a width, 1-D data being seen as 2-D
// data of height one, and the layouts those operators accept. Errors name
// the op, the parameter and the data's shape.
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
  *h = spatial == 2 ? s[0] : fill;
  *w = s[spatial - 1];
}

// A layout parameter, when given, must name the plain layout of `spatial`
// dimensions: 'NCW' or 'NCHW' (the kernels know no other).
inline void CheckSpatialLayout(const NodeAttrs& attrs, const std::optional<std::string>& layout,
                               int spatial) {
  if (!layout) return;
  const char* want = spatial == 1 ? "NCW" : "NCHW";
  TS_CHECK(*layout == want) << OpLabel(attrs) << ": layout '" << *layout
                            << "' is not supported with " << spatial
                            << " spatial dimension(s), expected '" << want << "'";
}

}  // namespace tessera::op
