// dot and batch_dot: matrix products over the GEMM layer (gemm.h), with
// MXNet's shape rules. An N-d lhs is the matrix (prod of all but its last
// axis) x (last axis); an N-d rhs is (first axis) x (prod of the rest);
// transpose_a / transpose_b transpose those matrices. Two 1-D arrays give
// their inner product, shape (1).
#pragma once

#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
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

// One product of a dot call on device xpu: C = op(A) op(B), or C += when
// accumulate; lda and ldb as stored, ldc = g.n. CPU: GemmAnyType on the
// op's threads; GPU: cuBLAS on the op's stream (dot_op_cuda.cc).
template <typename xpu>
void DotGemm(const OpContext& ctx, const TBlob& a, const TBlob& b, const TBlob& c, bool ta, bool tb,
             const GemmShape& g, bool accumulate, int64_t lda, int64_t ldb, const char* who);

template <bool kBatch, typename xpu>
void DotForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<DotParam>(attrs);
  GemmShape g;
  if (kBatch)
    BatchDotOutputShape(attrs, in[0].shape(), in[1].shape(), &g);
  else
    DotOutputShape(attrs, in[0].shape(), in[1].shape(), &g);
  const int64_t lda = p.transpose_a ? g.m : g.k, ldb = p.transpose_b ? g.k : g.n;
  DotGemm<xpu>(ctx, in[0], in[1], out[0], p.transpose_a, p.transpose_b, g, req[0] == kAddTo, lda,
               ldb, kBatch ? "batch_dot" : "dot");
}

// Inputs: out_grad, lhs, rhs. Outputs: lhs_grad, rhs_grad (stored layouts).
template <bool kBatch, typename xpu>
void DotBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<DotParam>(attrs);
  const char* who = kBatch ? "_backward_batch_dot" : "_backward_dot";
  const TBlob &dc = in[0], &a = in[1], &b = in[2];
  GemmShape g;
  if (kBatch)
    BatchDotOutputShape(attrs, a.shape(), b.shape(), &g);
  else
    DotOutputShape(attrs, a.shape(), b.shape(), &g);
  const bool ta = p.transpose_a, tb = p.transpose_b;
  const int64_t m = g.m, n = g.n, k = g.k;
  if (req[0] != kNullOp) {
    // dA = dC op(B)^T, stored transposed when ta.
    GemmShape ga = ta ? GemmShape{k, m, n, g.batch} : GemmShape{m, k, n, g.batch};
    if (!ta)
      DotGemm<xpu>(ctx, dc, b, out[0], false, !tb, ga, req[0] == kAddTo, n, tb ? k : n, who);
    else
      DotGemm<xpu>(ctx, b, dc, out[0], tb, true, ga, req[0] == kAddTo, tb ? k : n, n, who);
  }
  if (req[1] != kNullOp) {
    // dB = op(A)^T dC, stored transposed when tb.
    GemmShape gb = tb ? GemmShape{n, k, m, g.batch} : GemmShape{k, n, m, g.batch};
    if (!tb)
      DotGemm<xpu>(ctx, a, dc, out[1], !ta, false, gb, req[1] == kAddTo, ta ? m : k, n, who);
    else
      DotGemm<xpu>(ctx, dc, a, out[1], true, ta, gb, req[1] == kAddTo, n, ta ? m : k, who);
  }
}

}  // namespace tessera::op
