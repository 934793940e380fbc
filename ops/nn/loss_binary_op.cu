// softmax_cross_entropy on the GPU: each row's softmax by the GPU softmax
// (softmax_op_gpu.cuh) into the op's temp space, then the loss summed by one
// block (forward) or ograd * (p - one_hot(label)) per element (backward).
// The labels are checked on the host (one outside [0, classes) is an error
// naming its row), so they are copied there first.
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "engine/base/host_sync_cuda.h"
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/loss_binary_op-inl.h"
#include "ops/nn/softmax_output-inl.h"
#include "ops/tensor/block_sum.cuh"
#include "ops/tensor/softmax_op_gpu.cuh"

namespace tessera::op {
namespace {

constexpr int kThreads = 256;

// The op's temp space: the n labels as int64, then n * k probabilities.
template <typename A>
struct Scratch {
  int64_t* label;
  A* prob;
};

// Copies the n labels to the host, checks them, and uploads them as int64,
// with room for the probabilities after them.
template <typename T>
Scratch<AccType<T>> PrepareLabels(const NodeAttrs& attrs, const OpContext& ctx, const TBlob& label,
                                  int64_t n, int64_t k) {
  using A = AccType<T>;
  const cudaStream_t s = ctx.run_ctx.get_stream<cudaStream_t>();
  std::vector<T> host(static_cast<size_t>(n));
  TS_CUDA_CALL(cudaMemcpyAsync(host.data(), label.dptr_, n * sizeof(T), cudaMemcpyDeviceToHost, s));
  WaitForStreamOnHost(s, "loss labels to the host");
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) idx[r] = LabelIndex(attrs, host.data(), r, k);
  const size_t label_bytes = (n * sizeof(int64_t) + 15) / 16 * 16;
  char* base = static_cast<char*>(
      ctx.requested.at(0).get_space(std::max<size_t>(label_bytes + n * k * sizeof(A), 1)));
  Scratch<A> sc{reinterpret_cast<int64_t*>(base), reinterpret_cast<A*>(base + label_bytes)};
  TS_CUDA_CALL(
      cudaMemcpyAsync(sc.label, idx.data(), n * sizeof(int64_t), cudaMemcpyHostToDevice, s));
  return sc;
}

template <typename T, typename A>
__global__ void SumLoss(const A* prob, const int64_t* label, int64_t n, int64_t k, T* out,
                        OpReqType req) {
  __shared__ double buf[kThreads];
  double loss = 0;
  for (int64_t r = threadIdx.x; r < n; r += blockDim.x) {
    const A p = prob[r * k + label[r]];
    loss -= log(static_cast<double>(p > A(1e-8f) ? p : A(1e-8f)));
  }
  loss = BlockSum(loss, buf);
  if (threadIdx.x == 0) SoftmaxStore(out[0], static_cast<A>(loss), req);
}

struct XentGrad {
  template <typename T, typename A>
  TS_XINLINE static void Map(int64_t i, T* gx, const A* prob, const int64_t* label, int64_t k,
                             const T* g, OpReqType req) {
    const A v = prob[i] - (i % k == label[i / k] ? A(1) : A(0));
    SoftmaxStore(gx[i], static_cast<A>(g[0]) * v, req);
  }
};

struct ZeroFill {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* out) {
    out[i] = T(0);
  }
};

void XentForwardGpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const int64_t n = in[0].shape()[0], k = in[0].shape()[1];
  SwitchFloatDType(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto sc = PrepareLabels<T>(attrs, ctx, in[1], n, k);
    RunSoftmax<false>(gpu{}, ctx, SoftmaxGeom{n, k, 1}, in[0].dptr<T>(), sc.prob, 1.0, kWriteTo);
    SumLoss<<<1, kThreads, 0, ctx.run_ctx.get_stream<cudaStream_t>()>>>(sc.prob, sc.label, n, k,
                                                                        out[0].dptr<T>(), req[0]);
    TS_CUDA_CALL(cudaGetLastError());
  });
}

// Inputs: ograd (1,), data, label; outputs: data gradient, label gradient.
void XentBackwardGpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const int64_t n = in[1].shape()[0], k = in[1].shape()[1];
  SwitchFloatDType(in[1].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (req[0] != kNullOp) {
      const auto sc = PrepareLabels<T>(attrs, ctx, in[2], n, k);
      RunSoftmax<false>(gpu{}, ctx, SoftmaxGeom{n, k, 1}, in[1].dptr<T>(), sc.prob, 1.0, kWriteTo);
      Kernel<XentGrad, gpu>::Launch(
          ctx.run_ctx, n * k, out[0].dptr<T>(), static_cast<const AccType<T>*>(sc.prob),
          static_cast<const int64_t*>(sc.label), k, in[0].dptr<T>(), req[0]);
    }
    if (req[1] == kWriteTo || req[1] == kWriteInplace)
      Kernel<ZeroFill, gpu>::Launch(ctx.run_ctx, out[1].Size(), out[1].dptr<T>());
  });
}

}  // namespace

TS_REGISTER_OP(softmax_cross_entropy).set_attr<FCompute>(kFComputeGPU, XentForwardGpu);
TS_REGISTER_OP(_backward_softmax_cross_entropy).set_attr<FCompute>(kFComputeGPU, XentBackwardGpu);

}  // namespace tessera::op
