// L2Normalization on the GPU: a block per norm (row) sums its squares in
// double (BlockSum), then its threads write the row; the backward likewise
// sums dy * y per row before writing dx. Rows are the CPU's (L2Geom), so
// both sum the same elements; only the order of the partial sums differs.
#include <algorithm>

#include <cuda_runtime.h>

#include "engine/base/cuda_utils.h"
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/l2_normalization-inl.h"
#include "ops/tensor/block_sum.cuh"

namespace tessera::op {
namespace {

constexpr int kThreads = 256;

template <typename T>
__device__ __forceinline__ void Store(OpReqType req, T* dst, double v) {
  if (req == kNullOp) return;
  *dst = static_cast<T>(req == kAddTo ? static_cast<double>(*dst) + v : v);
}

template <typename T>
__global__ void L2ForwardKernel(L2Geom g, const T* x, double eps, T* y, OpReqType ry, T* norm,
                                OpReqType rn) {
  __shared__ double buf[kThreads];
  for (int64_t k = blockIdx.x; k < g.rows(); k += gridDim.x) {
    double ss = 0;
    for (int64_t r = threadIdx.x; r < g.red; r += blockDim.x) {
      const double v = static_cast<double>(x[g.index(k, r)]);
      ss += v * v;
    }
    const double nrm = sqrt(BlockSum(ss, buf) + eps);
    if (threadIdx.x == 0) Store(rn, norm + k, nrm);
    if (ry == kNullOp) continue;
    for (int64_t r = threadIdx.x; r < g.red; r += blockDim.x) {
      const int64_t at = g.index(k, r);
      Store(ry, y + at, static_cast<double>(x[at]) / nrm);
    }
  }
}

template <typename T>
__global__ void L2BackwardKernel(L2Geom g, const T* dy, const T* y, const T* norm, T* dx,
                                 OpReqType rx) {
  __shared__ double buf[kThreads];
  for (int64_t k = blockIdx.x; k < g.rows(); k += gridDim.x) {
    double dot = 0;
    for (int64_t r = threadIdx.x; r < g.red; r += blockDim.x) {
      const int64_t at = g.index(k, r);
      dot += static_cast<double>(dy[at]) * static_cast<double>(y[at]);
    }
    dot = BlockSum(dot, buf);
    const double nrm = static_cast<double>(norm[k]);
    for (int64_t r = threadIdx.x; r < g.red; r += blockDim.x) {
      const int64_t at = g.index(k, r);
      Store(rx, dx + at, (static_cast<double>(dy[at]) - static_cast<double>(y[at]) * dot) / nrm);
    }
  }
}

unsigned RowBlocks(const L2Geom& g) {
  return static_cast<unsigned>(std::min<int64_t>(g.rows(), 65535 * 8));
}

}  // namespace

template <>
struct L2Kernels<gpu> {
  template <typename T>
  static void Forward(const OpContext& ctx, const L2Geom& g, const T* x, double eps, T* y,
                      OpReqType ry, T* norm, OpReqType rn) {
    if (g.rows() == 0 || (ry == kNullOp && rn == kNullOp)) return;
    L2ForwardKernel<T><<<RowBlocks(g), kThreads, 0, ctx.run_ctx.get_stream<cudaStream_t>()>>>(
        g, x, eps, y, ry, norm, rn);
    TS_CUDA_CALL(cudaGetLastError());
  }
  template <typename T>
  static void Backward(const OpContext& ctx, const L2Geom& g, const T* dy, const T* y,
                       const T* norm, T* dx, OpReqType rx) {
    if (g.rows() == 0) return;
    L2BackwardKernel<T><<<RowBlocks(g), kThreads, 0, ctx.run_ctx.get_stream<cudaStream_t>()>>>(
        g, dy, y, norm, dx, rx);
    TS_CUDA_CALL(cudaGetLastError());
  }
};

TS_REGISTER_OP(L2Normalization).set_attr<FCompute>(kFComputeGPU, L2Forward<gpu>);
TS_REGISTER_OP(_backward_L2Normalization).set_attr<FCompute>(kFComputeGPU, L2Backward<gpu>);

}  // namespace tessera::op
