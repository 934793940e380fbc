// shape_array and size_array (MXNet's): an array's shape, or its number of
// elements, as an int64 array, computed on the array's device.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/base/shape.h"
#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/op.h"

namespace tessera::op {

// The dimensions, passed to the kernel by value (a GPU kernel's argument).
struct ShapeDims {
  int64_t d[Shape::kMaxNdim] = {};
};

template <int req>
struct fill_dims {
  TS_XINLINE static void Map(int64_t i, int64_t* out, ShapeDims dims) {
    AssignReq<req>(out[i], dims.d[i]);
  }
};

// size_array: dims holds the size in d[0].
template <typename xpu, bool kSize>
void ShapeArrayCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  TS_CHECK(out[0].dtype() == DType::kInt64) << OpLabel(attrs) << ": the output must be int64";
  ShapeDims dims;
  const Shape& s = in[0].shape();
  if (kSize) {
    dims.d[0] = s.Size();
  } else {
    for (int i = 0; i < s.ndim(); ++i) dims.d[i] = s[i];
  }
  SwitchReq(req[0], [&](auto r) {
    Kernel<fill_dims<r.value>, xpu>::Launch(ctx.run_ctx, out[0].Size(), out[0].dptr<int64_t>(),
                                            dims);
  });
}

}  // namespace tessera::op
