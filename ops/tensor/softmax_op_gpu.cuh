// The GPU softmax (RunSoftmax / RunSoftmaxGrad for gpu), shared by the
// softmax ops and SoftmaxOutput; include from .cu files only. A block per
// slice for contiguous slices (the axis is the last one with data after it
// of size 1), a thread per slice for strided slices (neighbouring threads
// then read neighbouring elements).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>

#include "engine/base/cuda_utils.h"
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/softmax_op-inl.h"

namespace tessera::op {
namespace softmax {

constexpr int kThreads = 256;

inline unsigned Blocks(int64_t work, int64_t per_block) {
  return static_cast<unsigned>(
      std::max<int64_t>(1, std::min<int64_t>((work + per_block - 1) / per_block, 65535LL * 8)));
}

TS_XINLINE float NegInf(float) {
  return -INFINITY;
}
TS_XINLINE double NegInf(double) {
  return -static_cast<double>(INFINITY);
}

// Every thread of the block gets the combination of the block's values.
template <bool kMax, typename A>
__device__ A BlockAll(A v, A* buf) {
  const int tid = threadIdx.x;
  buf[tid] = v;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w >>= 1) {
    if (tid < w) {
      const A a = buf[tid], b = buf[tid + w];
      buf[tid] = kMax ? ((b > a || b != b) ? b : a) : a + b;
    }
    __syncthreads();
  }
  const A r = buf[0];
  __syncthreads();
  return r;
}

template <bool kLog, typename T, typename O>
__global__ void ForwardThreadKernel(SoftmaxGeom g, const T* x, O* y, AccType<T> scale,
                                    OpReqType req) {
  for (int64_t s = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; s < g.outer * g.inner;
       s += int64_t(blockDim.x) * gridDim.x) {
    const int64_t m = s / g.inner, n = s - m * g.inner;
    const int64_t off = m * g.len * g.inner + n;
    SoftmaxSlice<kLog>(x + off, y + off, g.len, g.inner, scale, req);
  }
}

template <bool kLog, typename T, typename O>
__global__ void ForwardBlockKernel(int64_t rows, int64_t len, const T* x, O* y, AccType<T> scale,
                                   OpReqType req) {
  using A = AccType<T>;
  __shared__ A buf[kThreads];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * len;
    O* yr = y + row * len;
    A mx = NegInf(A(0));
    for (int64_t k = threadIdx.x; k < len; k += blockDim.x) {
      const A v = static_cast<A>(xr[k]) * scale;
      mx = (v > mx || v != v) ? v : mx;
    }
    mx = BlockAll<true>(mx, buf);
    A sum = A(0);
    for (int64_t k = threadIdx.x; k < len; k += blockDim.x)
      sum += SoftmaxExp(static_cast<A>(xr[k]) * scale - mx);
    sum = BlockAll<false>(sum, buf);
    if constexpr (kLog) {
      const A shift = mx + SoftmaxLog(sum);
      for (int64_t k = threadIdx.x; k < len; k += blockDim.x)
        SoftmaxStore(yr[k], static_cast<A>(xr[k]) * scale - shift, req);
    } else {
      const A inv = A(1) / sum;
      for (int64_t k = threadIdx.x; k < len; k += blockDim.x)
        SoftmaxStore(yr[k], SoftmaxExp(static_cast<A>(xr[k]) * scale - mx) * inv, req);
    }
  }
}

template <bool kLog, typename G, typename T>
__global__ void BackwardThreadKernel(SoftmaxGeom geom, const G* g, const G* y, T* gx,
                                     AccType<G> scale, OpReqType req) {
  for (int64_t s = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; s < geom.outer * geom.inner;
       s += int64_t(blockDim.x) * gridDim.x) {
    const int64_t m = s / geom.inner, n = s - m * geom.inner;
    const int64_t off = m * geom.len * geom.inner + n;
    SoftmaxGradSlice<kLog>(g + off, y + off, gx + off, geom.len, geom.inner, scale, req);
  }
}

template <bool kLog, typename G, typename T>
__global__ void BackwardBlockKernel(int64_t rows, int64_t len, const G* g, const G* y, T* gx,
                                    AccType<G> scale, OpReqType req) {
  using A = AccType<G>;
  __shared__ A buf[kThreads];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t base = row * len;
    A dot = A(0);
    for (int64_t k = threadIdx.x; k < len; k += blockDim.x) {
      const A gk = static_cast<A>(g[base + k]);
      dot += kLog ? gk : gk * static_cast<A>(y[base + k]);
    }
    dot = BlockAll<false>(dot, buf);
    for (int64_t k = threadIdx.x; k < len; k += blockDim.x) {
      const A gk = static_cast<A>(g[base + k]), yk = static_cast<A>(y[base + k]);
      const A v = kLog ? gk - SoftmaxExp(yk) * dot : yk * (gk - dot);
      SoftmaxStore(gx[base + k], v * scale, req);
    }
  }
}

}  // namespace softmax

template <bool kLog, typename T, typename O>
void RunSoftmax(gpu, const OpContext& ctx, const SoftmaxGeom& g, const T* x, O* y, double scale,
                OpReqType req) {
  cudaStream_t s = ctx.get_stream<cudaStream_t>();
  const AccType<T> sc = static_cast<AccType<T>>(scale);
  if (g.inner == 1 && g.len >= 64)
    softmax::ForwardBlockKernel<kLog>
        <<<softmax::Blocks(g.outer, 1), softmax::kThreads, 0, s>>>(g.outer, g.len, x, y, sc, req);
  else
    softmax::ForwardThreadKernel<kLog>
        <<<softmax::Blocks(g.outer * g.inner, softmax::kThreads), softmax::kThreads, 0, s>>>(
            g, x, y, sc, req);
  TS_CUDA_CALL(cudaGetLastError());
}

template <bool kLog, typename G, typename T>
void RunSoftmaxGrad(gpu, const OpContext& ctx, const SoftmaxGeom& geom, const G* g, const G* y,
                    T* gx, double scale, OpReqType req) {
  cudaStream_t s = ctx.get_stream<cudaStream_t>();
  const AccType<G> sc = static_cast<AccType<G>>(scale);
  if (geom.inner == 1 && geom.len >= 64)
    softmax::BackwardBlockKernel<kLog><<<softmax::Blocks(geom.outer, 1), softmax::kThreads, 0, s>>>(
        geom.outer, geom.len, g, y, gx, sc, req);
  else
    softmax::BackwardThreadKernel<kLog>
        <<<softmax::Blocks(geom.outer * geom.inner, softmax::kThreads), softmax::kThreads, 0, s>>>(
            geom, g, y, gx, sc, req);
  TS_CUDA_CALL(cudaGetLastError());
}

}  // namespace tessera::op
