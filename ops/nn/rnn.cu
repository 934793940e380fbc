// The fused RNN op on the GPU: the loop of rnn_loop-inl.h, the CPU's own,
// with cuBLAS products on the op's stream and the cells as kernels of a
// unit per thread (a kernel per step; the recurrence is sequential). The
// sequence lengths are read on the host (the op waits for its stream once)
// and uploaded to the temp space.
//
// The GPU forward always keeps the gates (there is no inference-only path
// as oneDNN's on the CPU), so its reserve always allows a backward and the
// backward does not read the reserve's flag back to the host.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/gemm_steps.h"
#include "ops/nn/nn_common.h"
#include "ops/nn/rnn-inl.h"
#include "ops/nn/rnn_loop-inl.h"
#include "ops/tensor/host_copy_cuda.h"

namespace tessera::op {

namespace {

void RnnForwardGpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  SwitchFloatDType(
      in[0].dtype(),
      [&](auto tag) {
        rnn::LoopForward<gpu, typename decltype(tag)::type>(attrs, ctx, in, req, out);
      },
      "RNN");
}

void RnnBackwardGpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  SwitchFloatDType(
      in[0].dtype(),
      [&](auto tag) {
        rnn::LoopBackward<gpu, typename decltype(tag)::type>(attrs, ctx, in, req, out);
      },
      "_backward_RNN");
}

}  // namespace

TS_REGISTER_OP(RNN).set_attr<FCompute>(kFComputeGPU, RnnForwardGpu);
TS_REGISTER_OP(_backward_RNN).set_attr<FCompute>(kFComputeGPU, RnnBackwardGpu);

}  // namespace tessera::op
