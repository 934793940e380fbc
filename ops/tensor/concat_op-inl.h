// concat, stack and split: each input (or output) is a box of the larger
// array, copied with one strided scatter (or gather) per input.
#pragma once

#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/op.h"
#include "ops/tensor/shape_strided-inl.h"

namespace tessera::op {

struct ConcatParam : Params<ConcatParam> {
  int num_args = 1;
  int dim = 1;
  static void Declare(ParamDecl<ConcatParam>& d) {
    d.field("num_args", &ConcatParam::num_args)
        .set_lower_bound(1)
        .describe("Number of inputs to concatenate.");
    d.field("dim", &ConcatParam::dim)
        .set_default(1)
        .set_axis()
        .describe("The axis to concatenate along; the other axes must agree.");
  }
};

struct StackParam : Params<StackParam> {
  int num_args = 1;
  int axis = 0;
  static void Declare(ParamDecl<StackParam>& d) {
    d.field("num_args", &StackParam::num_args)
        .set_lower_bound(1)
        .describe("Number of inputs to stack (all of one shape).");
    d.field("axis", &StackParam::axis)
        .set_default(0)
        .set_axis()
        .describe("Position of the new axis in the output (range [-ndim-1, ndim]).");
  }
};

struct SplitParam : Params<SplitParam> {
  int num_outputs = 1;
  int axis = 1;
  bool squeeze_axis = false;
  static void Declare(ParamDecl<SplitParam>& d) {
    d.field("num_outputs", &SplitParam::num_outputs)
        .set_lower_bound(1)
        .describe("Number of equal parts; must divide the size of `axis`.");
    d.field("axis", &SplitParam::axis).set_default(1).set_axis().describe("The axis to split.");
    d.field("squeeze_axis", &SplitParam::squeeze_axis)
        .set_default(false)
        .describe("Remove the split axis from the outputs (needs num_outputs equal to its size).");
  }
};

// Box i of `big` along `axis`: `part`'s dims, `big`'s strides, starting at
// `start` on that axis. With `drop_axis`, `part` lacks the axis (stack/squeeze).
inline StridedLayout BoxLayout(const Shape& big, const Shape& part, int axis, int64_t start,
                               bool drop_axis) {
  const std::vector<int64_t> st = ContiguousStrides(big);
  StridedLayout l;
  l.offset = start * st[static_cast<size_t>(axis)];
  int pd = 0;
  for (int d = 0; d < big.ndim(); ++d) {
    if (drop_axis && d == axis) continue;
    l.Push(part[pd++], st[static_cast<size_t>(d)]);
  }
  return l;
}

int ConcatAxis(const NodeAttrs& attrs, int ndim);
int StackAxis(const NodeAttrs& attrs, int out_ndim);
int SplitAxis(const NodeAttrs& attrs, int ndim);

template <typename xpu>
void ConcatCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const int axis = ConcatAxis(attrs, out[0].ndim());
  int64_t start = 0;
  for (const TBlob& x : in) {
    ScatterBlob<xpu>(ctx.run_ctx, req[0], out[0], x,
                     BoxLayout(out[0].shape(), x.shape(), axis, start, false));
    start += x.shape()[axis];
  }
}

// Inputs: the output gradient, then the forward inputs (read for their shapes).
template <typename xpu>
void ConcatBackwardCompute(const NodeAttrs& attrs, const OpContext& ctx,
                           const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                           const std::vector<TBlob>& out) {
  const int axis = ConcatAxis(attrs, in[0].ndim());
  int64_t start = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (req[i] != kNullOp)
      GatherBlob<xpu>(ctx.run_ctx, req[i], out[i], in[0],
                      BoxLayout(in[0].shape(), out[i].shape(), axis, start, false));
    start += out[i].shape()[axis];
  }
}

template <typename xpu>
void StackCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const int axis = StackAxis(attrs, out[0].ndim());
  for (size_t i = 0; i < in.size(); ++i)
    ScatterBlob<xpu>(ctx.run_ctx, req[0], out[0], in[i],
                     BoxLayout(out[0].shape(), in[i].shape(), axis, int64_t(i), true));
}

template <typename xpu>
void SplitCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<SplitParam>(attrs);
  const int axis = SplitAxis(attrs, in[0].ndim());
  const int64_t chunk = in[0].shape()[axis] / p.num_outputs;
  for (size_t i = 0; i < out.size(); ++i) {
    if (req[i] == kNullOp) continue;
    Shape part = in[0].shape();
    part[axis] = chunk;
    StridedLayout l = BoxLayout(in[0].shape(), part, axis, int64_t(i) * chunk, false);
    GatherBlob<xpu>(ctx.run_ctx, req[i], out[i], in[0], l);
  }
}

}  // namespace tessera::op
