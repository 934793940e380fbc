// Reductions over sets of axes: which axes an (axis, keepdims, exclude)
// request reduces, the shapes that result, and the ReducePlan that kernels
// walk. Also the helper other ops call to sum an array down to a smaller
// broadcast-compatible shape (the backward of every broadcasting op):
//
//   // grad_b has shape (1,3) or (3), ograd has shape (4,3): sum over axis 0.
//   ReduceToShape<xpu>(ctx, ograd_blob, grad_b_blob, req[1]);
//
// ReduceToShape<cpu> lives in reduce_utils.cc, ReduceToShape<gpu> in
// reduce_op.cu (CUDA builds only). Both honour every OpReqType, accumulate
// float32 in double and 16-bit floats in float, and need no temp space.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/base/shape.h"
#include "engine/base/tblob.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/op_attr_types.h"

namespace tessera::op {

// Bit i set: axis i is reduced.
using AxisMask = uint32_t;

// The axes reduced for an input of `ndim` dimensions. `axis` empty (None) or
// the empty tuple () reduces every axis (MXNet 1.x legacy, so symbol files
// saved with axis=() keep their meaning); with exclude, every axis not
// listed is reduced. Out-of-range and repeated axes raise an error naming
// `op` and `in` (the input shape).
AxisMask ReduceAxesMask(const Shape& in, const std::optional<std::vector<int64_t>>& axis,
                        bool exclude, const std::string& op);
// One axis (argmax/argmin); None: every axis (the flattened array).
AxisMask ReduceAxisMask(const Shape& in, const std::optional<int>& axis, const std::string& op);
// The output shape: reduced axes become 1 (keepdims) or disappear; a result
// without dimensions is (1,), as MXNet has no 0-d arrays. Unknown (0)
// dimensions of `in` stay unknown.
Shape ReducedShape(const Shape& in, AxisMask mask, bool keepdims);
// `in` with every reduced axis set to 1: the output seen with the input's ndim.
Shape KeepDimsShape(const Shape& in, AxisMask mask);
// Mutual inference for the kept dimensions: copies the known output
// dimensions back into unknown input dimensions. `out` is ReducedShape's form.
void FillInputFromReduced(Shape* in, AxisMask mask, bool keepdims, const Shape& out);

// A reduction flattened for kernels: size-1 axes dropped, neighbouring axes
// of the same kind (kept or reduced) merged. Outputs are numbered row-major
// over the kept axes, reduced elements row-major over the reduced axes; the
// input offset of (output o, reduced element r) is OutBase(o) + RedOffset(r).
struct ReducePlan {
  int n_keep = 0, n_red = 0;
  int64_t keep_dim[Shape::kMaxNdim] = {}, keep_stride[Shape::kMaxNdim] = {};
  int64_t red_dim[Shape::kMaxNdim] = {}, red_stride[Shape::kMaxNdim] = {};
  int64_t out_size = 1, red_size = 1;
  // The input's innermost axis is reduced (each output reads contiguous runs
  // of red_dim[n_red-1]); otherwise it is kept (neighbouring outputs read
  // neighbouring elements, and a reduction step reads a contiguous row).
  bool inner_reduced = false;

  TS_XINLINE int64_t OutBase(int64_t o) const {
    int64_t off = 0;
    for (int i = n_keep - 1; i >= 0; --i) {
      const int64_t q = o / keep_dim[i];
      off += (o - q * keep_dim[i]) * keep_stride[i];
      o = q;
    }
    return off;
  }
  TS_XINLINE int64_t RedOffset(int64_t r) const {
    int64_t off = 0;
    for (int i = n_red - 1; i >= 0; --i) {
      const int64_t q = r / red_dim[i];
      off += (r - q * red_dim[i]) * red_stride[i];
      r = q;
    }
    return off;
  }
};

// `small` has in's ndim with 1 at every reduced axis (KeepDimsShape).
ReducePlan MakeReducePlan(const Shape& in, const Shape& small);

// Maps an input element to its output element for elementwise backward
// kernels: precomputed per-axis strides of the output (0 on reduced axes).
struct BroadcastIndex {
  int ndim = 0;
  int64_t dim[Shape::kMaxNdim] = {}, out_stride[Shape::kMaxNdim] = {};
  TS_XINLINE int64_t operator()(int64_t i) const {
    int64_t o = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t q = i / dim[d];
      o += (i - q * dim[d]) * out_stride[d];
      i = q;
    }
    return o;
  }
};
// `small` broadcasts to `big` (same ndim); size-1 axes and merged runs of
// the same kind are collapsed so the per-element cost stays small.
BroadcastIndex MakeBroadcastIndex(const Shape& big, const Shape& small);

// `in` summed into `out`, whose shape broadcasts to in's (numpy rules: out
// may have fewer dimensions, aligned right; each of its dimensions equals
// in's or is 1). Same dtype; every dtype but bool.
template <typename xpu>
void ReduceToShape(const OpContext& ctx, const TBlob& in, const TBlob& out, OpReqType req);
template <>
void ReduceToShape<cpu>(const OpContext& ctx, const TBlob& in, const TBlob& out, OpReqType req);
template <>
void ReduceToShape<gpu>(const OpContext& ctx, const TBlob& in, const TBlob& out, OpReqType req);

// out's shape seen with in's ndim (left-padded with 1s), or an error naming
// `op` when it does not broadcast to in.
Shape AlignToBroadcast(const Shape& in, const Shape& out, const char* op);

}  // namespace tessera::op
