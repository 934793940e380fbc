// Ops that change only the shape: reshape, flatten, expand_dims, squeeze.
// Each returns a new array holding a copy of the data (the Lua binding uses
// NDArray views where it can); their gradient reshapes the output gradient
// back to the input's shape.
#pragma once

#include <optional>
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/op.h"
#include "ops/tensor/shape_strided-inl.h"

namespace tessera::op {

struct ReshapeParam : Params<ReshapeParam> {
  std::vector<int64_t> shape;
  bool reverse = false;
  static void Declare(ParamDecl<ReshapeParam>& d) {
    d.field("shape", &ReshapeParam::shape)
        .describe(
            "The target shape. Special values: 0 copies the input dimension, -1 infers it from "
            "the size, -2 copies all remaining dimensions, -3 merges two consecutive input "
            "dimensions, -4 splits one input dimension into the two values that follow (one of "
            "them may be -1).");
    d.field("reverse", &ReshapeParam::reverse)
        .set_default(false)
        .describe("Match the special values from the right instead of the left.");
  }
};

struct ExpandDimsParam : Params<ExpandDimsParam> {
  int axis = 0;
  static void Declare(ParamDecl<ExpandDimsParam>& d) {
    d.field("axis", &ExpandDimsParam::axis)
        .set_axis()
        .describe(
            "Position of the new size-1 axis in the output; negative counts from the end "
            "(range [-ndim-1, ndim]).");
  }
};

struct SqueezeParam : Params<SqueezeParam> {
  std::optional<std::vector<int64_t>> axis;
  static void Declare(ParamDecl<SqueezeParam>& d) {
    d.field("axis", &SqueezeParam::axis)
        .set_default(std::nullopt)
        .set_axis()
        .describe(
            "The size-1 axes to remove; None removes every size-1 axis. Removing every axis "
            "leaves shape (1).");
  }
};

// Copies forward and backward alike (same element count, dense).
template <typename xpu>
void ReshapeLikeCompute(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  CopyBlob<xpu>(ctx.run_ctx, req[0], out[0], in[0]);
}

}  // namespace tessera::op
