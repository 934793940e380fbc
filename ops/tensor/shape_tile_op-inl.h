// tile, repeat and flip: copies through a strided view of the input (a
// repeat is a stride-0 axis, a flip a negative stride); the gradients of tile
// and repeat sum the copies back.
#pragma once

#include <optional>
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/op.h"
#include "ops/tensor/shape_strided-inl.h"

namespace tessera::op {

struct TileParam : Params<TileParam> {
  std::vector<int64_t> reps;
  static void Declare(ParamDecl<TileParam>& d) {
    d.field("reps", &TileParam::reps)
        .describe(
            "Repetitions per axis (each >= 1). When shorter than the input's axes, 1s are "
            "prepended to it; when longer, the input gets leading axes of size 1.");
  }
};

struct RepeatParam : Params<RepeatParam> {
  int repeats = 1;
  std::optional<int> axis;
  static void Declare(ParamDecl<RepeatParam>& d) {
    d.field("repeats", &RepeatParam::repeats)
        .set_lower_bound(1)
        .describe("How many times each element is repeated.");
    d.field("axis", &RepeatParam::axis)
        .set_default(std::nullopt)
        .set_axis()
        .describe("The axis along which elements repeat; None flattens the input first.");
  }
};

struct FlipParam : Params<FlipParam> {
  std::vector<int64_t> axis;
  static void Declare(ParamDecl<FlipParam>& d) {
    d.field("axis", &FlipParam::axis).set_axis().describe("The axes to reverse.");
  }
};

// The input and the repeat counts, both padded to the same number of axes.
struct TileDims {
  std::vector<int64_t> in, reps;
};
TileDims PadTile(const NodeAttrs& attrs, const Shape& in);

// Forward layouts (the input seen with the output's element order) and the
// dimensions of the output gradient with the repeated axes marked for summing.
inline StridedLayout TileLayout(const TileDims& t) {
  StridedLayout l;
  int64_t stride = 1;
  std::vector<int64_t> st(t.in.size());
  for (size_t d = t.in.size(); d-- > 0;) {
    st[d] = stride;
    stride *= t.in[d];
  }
  for (size_t d = 0; d < t.in.size(); ++d) {
    l.Push(t.reps[d], 0);
    l.Push(t.in[d], st[d]);
  }
  return l;
}

// repeat's input dims with a stride-0 axis after `axis` (flattened when none).
inline StridedLayout RepeatLayout(const Shape& in, const RepeatParam& p, int axis) {
  StridedLayout l;
  if (!p.axis) {
    l.Push(in.Size(), 1);
    l.Push(p.repeats, 0);
    return l;
  }
  const std::vector<int64_t> st = ContiguousStrides(in);
  for (int d = 0; d < in.ndim(); ++d) {
    l.Push(in[d], st[static_cast<size_t>(d)]);
    if (d == axis) l.Push(p.repeats, 0);
  }
  return l;
}
int RepeatAxis(const NodeAttrs& attrs, int ndim);

// The flipped axes of an input of `ndim` axes (normalised, checked).
std::vector<bool> FlipAxes(const NodeAttrs& attrs, int ndim);

inline StridedLayout FlipLayout(const Shape& in, const std::vector<bool>& flip) {
  const std::vector<int64_t> st = ContiguousStrides(in);
  StridedLayout l;
  for (int d = 0; d < in.ndim(); ++d) {
    const int64_t s = st[static_cast<size_t>(d)];
    if (flip[static_cast<size_t>(d)]) {
      l.offset += (in[d] - 1) * s;
      l.Push(in[d], -s);
    } else {
      l.Push(in[d], s);
    }
  }
  return l;
}

template <typename xpu>
void TileCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  GatherBlob<xpu>(ctx.run_ctx, req[0], out[0], in[0], TileLayout(PadTile(attrs, in[0].shape())));
}

template <typename xpu>
void RepeatCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<RepeatParam>(attrs);
  GatherBlob<xpu>(ctx.run_ctx, req[0], out[0], in[0],
                  RepeatLayout(in[0].shape(), p, RepeatAxis(attrs, in[0].ndim())));
}

template <typename xpu>
void FlipCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  GatherBlob<xpu>(ctx.run_ctx, req[0], out[0], in[0],
                  FlipLayout(in[0].shape(), FlipAxes(attrs, in[0].ndim())));
}

// Sums the stride-0 axes of a forward layout out of the output gradient:
// input 0 is the output gradient, output 0 the input gradient.
inline void RepeatedAxes(const StridedLayout& l, std::vector<int64_t>* dims,
                         std::vector<bool>* reduced) {
  for (int d = 0; d < l.ndim; ++d) {
    dims->push_back(l.dims[d]);
    reduced->push_back(l.strides[d] == 0 && l.dims[d] > 1);
  }
}

template <typename xpu>
void TileBackwardCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                         const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  std::vector<int64_t> dims;
  std::vector<bool> reduced;
  RepeatedAxes(TileLayout(PadTile(attrs, out[0].shape())), &dims, &reduced);
  ReduceSumBlob<xpu>(ctx.run_ctx, req[0], out[0], in[0], dims, reduced, "_backward_tile");
}

template <typename xpu>
void RepeatBackwardCompute(const NodeAttrs& attrs, const OpContext& ctx,
                           const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                           const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<RepeatParam>(attrs);
  std::vector<int64_t> dims;
  std::vector<bool> reduced;
  RepeatedAxes(RepeatLayout(out[0].shape(), p, RepeatAxis(attrs, out[0].ndim())), &dims, &reduced);
  ReduceSumBlob<xpu>(ctx.run_ctx, req[0], out[0], in[0], dims, reduced, "_backward_repeat");
}

}  // namespace tessera::op
