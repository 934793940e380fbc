// LayerNorm, InstanceNorm and GroupNorm on the GPU: norm::Kernels<gpu>, a
// block per group summing its n elements (the mean, then the squared
// deviations, as the CPU's norm_groups-inl.h), then a thread per gamma /
// beta entry summing its share of every group for their gradients, in the
// groups' order, so no atomics. The backward keeps each group's statistics
// in the op's temp space.
#include <cuda_runtime.h>

#include "engine/base/cuda_utils.h"
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/layer_norm-inl.h"
#include "ops/tensor/block_sum.cuh"

namespace tessera::op {
namespace {

constexpr int kThreads = 256;

// Group gi's mean and standard deviation, seen by every thread of the block.
template <typename T>
__device__ void GroupStats(const norm::Geom& g, const T* x, int64_t gi, double eps, double* buf,
                           double* mean, double* stdev) {
  const int64_t o = gi / g.inner, i = gi % g.inner;
  double s = 0;
  for (int64_t k = threadIdx.x; k < g.n; k += blockDim.x)
    s += static_cast<double>(x[g.index(o, k, i)]);
  const double m = BlockSum(s, buf) / g.n;
  double v = 0;
  for (int64_t k = threadIdx.x; k < g.n; k += blockDim.x) {
    const double d = static_cast<double>(x[g.index(o, k, i)]) - m;
    v += d * d;
  }
  *mean = m;
  *stdev = sqrt(BlockSum(v, buf) / g.n + eps);
}

template <typename T>
__device__ __forceinline__ void Store(OpReqType req, T* dst, double v) {
  if (req == kNullOp) return;
  *dst = static_cast<T>(req == kAddTo ? static_cast<double>(*dst) + v : v);
}

template <typename T>
__global__ void ForwardKernel(norm::Geom g, const T* x, const T* gamma, const T* beta, double eps,
                              T* y, OpReqType req, T* mean_out, T* std_out) {
  __shared__ double buf[kThreads];
  for (int64_t gi = blockIdx.x; gi < g.groups(); gi += gridDim.x) {
    double mean, stdev;
    GroupStats(g, x, gi, eps, buf, &mean, &stdev);
    if (threadIdx.x == 0) {
      if (mean_out) mean_out[gi] = static_cast<T>(mean);
      if (std_out) std_out[gi] = static_cast<T>(stdev);
    }
    const int64_t o = gi / g.inner, i = gi % g.inner;
    for (int64_t k = threadIdx.x; k < g.n; k += blockDim.x) {
      const int64_t at = g.index(o, k, i), j = g.affine(o, k);
      const double xh = (static_cast<double>(x[at]) - mean) / stdev;
      Store(req, y + at, static_cast<double>(gamma[j]) * xh + static_cast<double>(beta[j]));
    }
  }
}

// dx = (h - mean_k(h) - x^ mean_k(h x^)) / std, h = dy * gamma; keeps the stats.
template <typename T>
__global__ void BackwardDataKernel(norm::Geom g, const T* dy, const T* x, const T* gamma,
                                   double eps, T* dx, OpReqType rx, double* stats) {
  __shared__ double buf[kThreads];
  for (int64_t gi = blockIdx.x; gi < g.groups(); gi += gridDim.x) {
    double mean, stdev;
    GroupStats(g, x, gi, eps, buf, &mean, &stdev);
    if (threadIdx.x == 0) {
      stats[2 * gi] = mean;
      stats[2 * gi + 1] = stdev;
    }
    if (rx == kNullOp) continue;
    const int64_t o = gi / g.inner, i = gi % g.inner;
    double m1 = 0, m2 = 0;
    for (int64_t k = threadIdx.x; k < g.n; k += blockDim.x) {
      const int64_t at = g.index(o, k, i);
      const double h = static_cast<double>(dy[at]) * static_cast<double>(gamma[g.affine(o, k)]);
      m1 += h;
      m2 += h * (static_cast<double>(x[at]) - mean) / stdev;
    }
    m1 = BlockSum(m1, buf) / g.n;
    m2 = BlockSum(m2, buf) / g.n;
    for (int64_t k = threadIdx.x; k < g.n; k += blockDim.x) {
      const int64_t at = g.index(o, k, i);
      const double xh = (static_cast<double>(x[at]) - mean) / stdev;
      const double h = static_cast<double>(dy[at]) * static_cast<double>(gamma[g.affine(o, k)]);
      Store(rx, dx + at, (h - m1 - xh * m2) / stdev);
    }
  }
}

// gamma / beta entry j: its elements in every group, in the groups' order.
struct AffineGrad {
  template <typename T>
  TS_XINLINE static void Map(int64_t j, norm::Geom g, const T* dy, const T* x, const double* stats,
                             T* dgamma, OpReqType rg, T* dbeta, OpReqType rb) {
    double sg = 0, sb = 0;
    auto add = [&](int64_t gi, int64_t at) {
      const double d = static_cast<double>(dy[at]);
      sg += d * (static_cast<double>(x[at]) - stats[2 * gi]) / stats[2 * gi + 1];
      sb += d;
    };
    if (!g.per_group) {  // LayerNorm: entry j is position k = j of every group
      for (int64_t gi = 0; gi < g.groups(); ++gi) add(gi, g.index(gi / g.inner, j, gi % g.inner));
    } else {  // a channel: span elements of the groups o = its group, mod channels
      const int64_t per = g.n / g.span, first_o = j / per, k0 = (j % per) * g.span;
      for (int64_t o = first_o; o < g.outer; o += g.channels)
        for (int64_t k = k0; k < k0 + g.span; ++k) add(o, g.index(o, k, 0));
    }
    if (rg != kNullOp)
      dgamma[j] = static_cast<T>(rg == kAddTo ? static_cast<double>(dgamma[j]) + sg : sg);
    if (rb != kNullOp)
      dbeta[j] = static_cast<T>(rb == kAddTo ? static_cast<double>(dbeta[j]) + sb : sb);
  }
};

unsigned GroupBlocks(const norm::Geom& g) {
  return static_cast<unsigned>(std::min<int64_t>(g.groups(), 65535 * 8));
}

}  // namespace

template <>
struct norm::Kernels<gpu> {
  template <typename T>
  static void Forward(const OpContext& ctx, const Geom& g, const T* x, const T* gamma,
                      const T* beta, double eps, T* y, OpReqType req, T* mean_out, T* std_out) {
    if (g.groups() == 0 || g.n == 0) return;
    ForwardKernel<T><<<GroupBlocks(g), kThreads, 0, ctx.run_ctx.get_stream<cudaStream_t>()>>>(
        g, x, gamma, beta, eps, y, req, mean_out, std_out);
    TS_CUDA_CALL(cudaGetLastError());
  }
  template <typename T>
  static void Backward(const OpContext& ctx, const Geom& g, const T* dy, const T* x, const T* gamma,
                       double eps, T* dx, OpReqType rx, T* dgamma, OpReqType rg, T* dbeta,
                       OpReqType rb, int64_t n_affine) {
    if (g.groups() == 0 || g.n == 0) return;
    double* stats =
        ctx.requested.at(0).get_space_typed<double>(static_cast<size_t>(2 * g.groups()));
    BackwardDataKernel<T><<<GroupBlocks(g), kThreads, 0, ctx.run_ctx.get_stream<cudaStream_t>()>>>(
        g, dy, x, gamma, eps, dx, rx, stats);
    TS_CUDA_CALL(cudaGetLastError());
    if (rg != kNullOp || rb != kNullOp)
      Kernel<AffineGrad, gpu>::Launch(ctx.run_ctx, n_affine, g, dy, x,
                                      static_cast<const double*>(stats), dgamma, rg, dbeta, rb);
  }
};

TS_REGISTER_OP(LayerNorm).set_attr<FCompute>(kFComputeGPU, NormForward<gpu, true>);
TS_REGISTER_OP(_backward_LayerNorm).set_attr<FCompute>(kFComputeGPU, NormBackward<gpu, true>);
TS_REGISTER_OP(InstanceNorm).set_attr<FCompute>(kFComputeGPU, NormForward<gpu, false>);
TS_REGISTER_OP(_backward_InstanceNorm).set_attr<FCompute>(kFComputeGPU, NormBackward<gpu, false>);
TS_REGISTER_OP(GroupNorm).set_attr<FCompute>(kFComputeGPU, GroupNormForward<gpu>);
TS_REGISTER_OP(_backward_GroupNorm).set_attr<FCompute>(kFComputeGPU, GroupNormBackward<gpu>);

}  // namespace tessera::op
