// broadcast_to and broadcast_like: size-1 axes repeated to a larger shape (a
// gather with stride 0 on those axes); the gradient sums them back.
#pragma once

#include <optional>
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/op.h"
#include "ops/tensor/shape_strided-inl.h"

namespace tessera::op {

struct BroadcastToParam : Params<BroadcastToParam> {
  Shape shape;
  static void Declare(ParamDecl<BroadcastToParam>& d) {
    d.field("shape", &BroadcastToParam::shape)
        .describe(
            "The target shape, with as many axes as the input; 0 keeps the input's size on that "
            "axis. Only axes of size 1 can grow.");
  }
};

struct BroadcastAxisParam : Params<BroadcastAxisParam> {
  std::vector<int64_t> axis, size;
  static void Declare(ParamDecl<BroadcastAxisParam>& d) {
    d.field("axis", &BroadcastAxisParam::axis)
        .set_axis()
        .describe("The axes to repeat along; each has size 1 in the input.");
    d.field("size", &BroadcastAxisParam::size)
        .describe("The size each axis of `axis` reaches, in the same order.");
  }
};

struct BroadcastLikeParam : Params<BroadcastLikeParam> {
  std::optional<std::vector<int64_t>> lhs_axes, rhs_axes;
  static void Declare(ParamDecl<BroadcastLikeParam>& d) {
    d.field("lhs_axes", &BroadcastLikeParam::lhs_axes)
        .set_default(std::nullopt)
        .set_axis()
        .describe("Axes of lhs to broadcast; None: all of them (lhs takes the shape of rhs).");
    d.field("rhs_axes", &BroadcastLikeParam::rhs_axes)
        .set_default(std::nullopt)
        .set_axis()
        .describe("Axes of rhs giving the sizes for lhs_axes, pairwise; None: all of them.");
  }
};

// in (same ndim as out, each axis equal or 1) viewed with the shape of out.
inline StridedLayout BroadcastLayout(const Shape& in, const Shape& out) {
  const std::vector<int64_t> st = ContiguousStrides(in);
  StridedLayout l;
  for (int d = 0; d < out.ndim(); ++d)
    l.Push(out[d], in[d] == out[d] ? st[static_cast<size_t>(d)] : 0);
  return l;
}

template <typename xpu>
void BroadcastCompute(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  GatherBlob<xpu>(ctx.run_ctx, req[0], out[0], in[0],
                  BroadcastLayout(in[0].shape(), out[0].shape()));
}

// Gradient: sums the output gradient (input 0) over the axes where the
// forward input (input 1, read for its shape) had size 1.
template <typename xpu>
void BroadcastBackwardCompute(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                              const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const Shape &g = in[0].shape(), &x = out[0].shape();
  std::vector<int64_t> dims = g.ToVector();
  std::vector<bool> reduced(dims.size());
  for (int d = 0; d < g.ndim(); ++d) reduced[static_cast<size_t>(d)] = x[d] != g[d];
  ReduceSumBlob<xpu>(ctx.run_ctx, req[0], out[0], in[0], dims, reduced, "_backward_broadcast_to");
}

}  // namespace tessera::op
