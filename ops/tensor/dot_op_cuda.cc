// dot and batch_dot on the GPU: the calls of dot_op-inl.h, each product
// through cuBLAS on the op's stream (gemm_gpu.h).
#include "ops/tensor/dot_op-inl.h"
#include "ops/tensor/gemm_gpu.h"

namespace tessera::op {

template <>
void DotGemm<gpu>(const OpContext& ctx, const TBlob& a, const TBlob& b, const TBlob& c, bool ta,
                  bool tb, const GemmShape& g, bool accumulate, int64_t lda, int64_t ldb,
                  const char* who) {
  GpuGemm p;
  p.trans_a = ta;
  p.trans_b = tb;
  p.m = g.m;
  p.n = g.n;
  p.k = g.k;
  p.lda = lda;
  p.ldb = ldb;
  p.ldc = g.n;
  p.batch = g.batch;
  p.stride_a = g.m * g.k;
  p.stride_b = g.k * g.n;
  p.stride_c = g.m * g.n;
  p.accumulate = accumulate;
  if (IsFloatingPoint(c.dtype()))
    GemmGpu(ctx.run_ctx, c.dtype(), p, a.dptr_, b.dptr_, c.dptr_, who);
  else
    GemmGpuInteger(ctx.run_ctx, c.dtype(), p, a.dptr_, b.dptr_, c.dptr_, who);
}

TS_REGISTER_OP(dot).set_attr<FCompute>(kFComputeGPU, DotForward<false, gpu>);
TS_REGISTER_OP(batch_dot).set_attr<FCompute>(kFComputeGPU, DotForward<true, gpu>);
TS_REGISTER_OP(_backward_dot).set_attr<FCompute>(kFComputeGPU, DotBackward<false, gpu>);
TS_REGISTER_OP(_backward_batch_dot).set_attr<FCompute>(kFComputeGPU, DotBackward<true, gpu>);

}  // namespace tessera::op
