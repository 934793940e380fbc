// dot and batch_dot: matrix products over the GEMM layer (gemm.h), with
// MXNet's shape rules. An N-d lhs is the matrix (prod of all but its last
// axis) x (last axis); an N-d rhs is (first axis) x (prod of the rest);
// transpose_a / transpose_b transpose those matrices. Two 1-D arrays give
// their inner product, shape (1).
#pragma once

#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/op.h"

namespace tessera::op {

struct DotParam : Params<DotParam> {
  bool transpose_a = false, transpose_b = false;
  static void Declare(ParamDecl<DotParam>& d) {
    d.field("transpose_a", &DotParam::transpose_a)
        .set_default(false)
        .describe("Use the transpose of the lhs matrix.");
    d.field("transpose_b", &DotParam::transpose_b)
        .set_default(false)
        .describe("Use the transpose of the rhs matrix.");
  }
};

// The matrix problem a dot call is: C (m x n) = op(A) (m x k) op(B) (k x n).
struct GemmShape {
  int64_t m = 0, n = 0, k = 0, batch = 1;
};

// Output shape of dot; errors name both shapes.
Shape DotOutputShape(const NodeAttrs& attrs, const Shape& lhs, const Shape& rhs, GemmShape* g);
Shape BatchDotOutputShape(const NodeAttrs& attrs, const Shape& lhs, const Shape& rhs, GemmShape* g);

// C = op(A) op(B) (beta 0) or C += op(A) op(B) (beta 1), any numeric dtype:
// float and double through Gemm, the others through GemmFallback, on the
// op's `threads` (RunContext::omp_threads).
void GemmAnyType(const TBlob& a, const TBlob& b, const TBlob& c, bool ta, bool tb,
                 const GemmShape& g, bool accumulate, int64_t lda, int64_t ldb, int threads);

}  // namespace tessera::op
