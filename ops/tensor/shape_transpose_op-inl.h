// transpose: permutes the axes. The copy is a strided gather; on the CPU a
// permutation that moves the fastest axis runs in cache-sized tiles, on the
// GPU a plain 2-D transpose goes through shared memory (shape_transpose_op.cu).
#pragma once

#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/op.h"
#include "ops/tensor/shape_strided-inl.h"

namespace tessera::op {

struct TransposeParam : Params<TransposeParam> {
  std::vector<int64_t> axes;
  static void Declare(ParamDecl<TransposeParam>& d) {
    d.field("axes", &TransposeParam::axes)
        .set_default(std::vector<int64_t>{})
        .set_axis()
        .describe(
            "Output axis i is input axis axes[i]; a permutation of all the axes (negative values "
            "count from the end). Empty reverses the axes.");
  }
};

// The permutation for an input of `ndim` axes, normalised and checked.
std::vector<int> TransposeAxes(const NodeAttrs& attrs, int ndim);

// The input viewed in output order.
inline StridedLayout TransposeLayout(const Shape& in, const std::vector<int>& axes) {
  const std::vector<int64_t> st = ContiguousStrides(in);
  StridedLayout l;
  for (int a : axes) l.Push(in[a], st[static_cast<size_t>(a)]);
  return l;
}

// A plain matrix transpose on the GPU (defined in the .cu file): out (cols x
// rows) (req)= in (rows x cols)^T. Returns false when it does not apply.
template <typename xpu>
bool Transpose2D(const RunContext&, OpReqType, const TBlob&, const TBlob&, const StridedLayout&) {
  return false;
}

template <typename xpu>
void TransposeCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  StridedLayout l = TransposeLayout(in[0].shape(), TransposeAxes(attrs, in[0].ndim()));
  if (Transpose2D<xpu>(ctx.run_ctx, req[0], out[0], in[0], l)) return;
  GatherBlob<xpu>(ctx.run_ctx, req[0], out[0], in[0], l);
}

}  // namespace tessera::op
