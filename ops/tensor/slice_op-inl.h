// slice, slice_axis and slice_like: a box of the input, possibly with steps
// (negative steps walk backwards). Forward is a strided gather; the gradient
// zero-fills the input's shape and scatters the output gradient into the box.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/op.h"
#include "ops/tensor/shape_strided-inl.h"

namespace tessera::op {

// A tuple whose entries may be None: "(0, None, -1)".
struct SliceIndices {
  std::vector<std::optional<int64_t>> v;
};
bool ParseValue(std::string_view s, SliceIndices* out);
std::string FormatValue(const SliceIndices& v);
template <>
struct ValueTypeName<SliceIndices> {
  static constexpr const char* value = "tuple of int or None";
};

struct SliceParam : Params<SliceParam> {
  SliceIndices begin, end, step;
  static void Declare(ParamDecl<SliceParam>& d) {
    d.field("begin", &SliceParam::begin)
        .describe(
            "Start index per axis, from the first axis on (fewer entries than axes leave the "
            "rest whole); negative counts from the end; None: the start (the end for a negative "
            "step).");
    d.field("end", &SliceParam::end)
        .describe("End index (exclusive) per axis, as `begin`; None: past the last element.");
    d.field("step", &SliceParam::step)
        .set_default(SliceIndices{})
        .describe("Step per axis (not 0; negative walks backwards); empty or None: 1.");
  }
};

struct SliceAxisParam : Params<SliceAxisParam> {
  int axis = 0;
  int begin = 0;
  std::optional<int> end;
  static void Declare(ParamDecl<SliceAxisParam>& d) {
    d.field("axis", &SliceAxisParam::axis).set_axis().describe("The axis to slice.");
    d.field("begin", &SliceAxisParam::begin)
        .describe("Start index along the axis; negative counts from the end.");
    d.field("end", &SliceAxisParam::end)
        .describe("End index (exclusive); negative counts from the end; None: the axis' size.");
  }
};

struct SliceLikeParam : Params<SliceLikeParam> {
  std::vector<int64_t> axes;
  static void Declare(ParamDecl<SliceLikeParam>& d) {
    d.field("axes", &SliceLikeParam::axes)
        .set_default(std::vector<int64_t>{})
        .set_axis()
        .describe(
            "Axes to cut to the size of shape_like's same axis; empty: all axes (both inputs "
            "then need the same number of axes).");
  }
};

// The box each op selects from an input of shape `data`; `out` is the
// output's shape (already inferred).
using SliceLayoutFn = StridedLayout (*)(const NodeAttrs&, const Shape& data, const Shape& out);
StridedLayout SliceLayout(const NodeAttrs& attrs, const Shape& data, const Shape& out);
StridedLayout SliceAxisLayout(const NodeAttrs& attrs, const Shape& data, const Shape& out);
// slice_like and the backward of all three start every axis at 0.
inline StridedLayout CornerLayout(const NodeAttrs&, const Shape& data, const Shape& out) {
  const std::vector<int64_t> st = ContiguousStrides(data);
  StridedLayout l;
  for (int d = 0; d < out.ndim(); ++d) l.Push(out[d], st[static_cast<size_t>(d)]);
  return l;
}

template <typename xpu, SliceLayoutFn Layout>
void SliceCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  GatherBlob<xpu>(ctx.run_ctx, req[0], out[0], in[0], Layout(attrs, in[0].shape(), out[0].shape()));
}

// Inputs: the output gradient and the forward input (read for its shape);
// output: the input gradient, zero outside the box.
template <typename xpu, SliceLayoutFn Layout>
void SliceBackwardCompute(const NodeAttrs& attrs, const OpContext& ctx,
                          const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                          const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const StridedLayout l = Layout(attrs, out[0].shape(), in[0].shape());
  if (req[0] == kAddTo) {
    ScatterBlob<xpu>(ctx.run_ctx, kAddTo, out[0], in[0], l);
    return;
  }
  ZeroBlob<xpu>(ctx.run_ctx, out[0]);
  ScatterBlob<xpu>(ctx.run_ctx, kWriteTo, out[0], in[0], l);
}

}  // namespace tessera::op
