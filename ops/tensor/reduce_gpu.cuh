// GPU drivers of the reductions (include from .cu files only). Two kernels
// cover every ReducePlan:
//  - block per output: the threads of a block stride over the output's
//    reduced elements, then combine in shared memory. Used when each output
//    reads contiguous runs (innermost axis reduced) or there are few outputs
//    with long reductions.
//  - thread per output: each thread loops over its reduced elements. Used
//    when the innermost axis is kept, so neighbouring threads read
//    neighbouring elements (coalesced), and there are enough outputs.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>

#include "engine/base/cuda_utils.h"
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/reduce_op-inl.h"
#include "ops/tensor/reduce_reducers.h"
#include "ops/tensor/reduce_utils.h"

namespace tessera::op {
namespace reduce {

inline constexpr int kGpuThreads = 256;
inline constexpr int64_t kGpuMaxBlocks = 65535LL * 8;

inline unsigned GpuBlocks(int64_t work, int64_t per_block) {
  return static_cast<unsigned>(
      std::max<int64_t>(1, std::min<int64_t>((work + per_block - 1) / per_block, kGpuMaxBlocks)));
}

template <typename R, typename T, typename O>
__global__ void ReduceThreadPerOutputKernel(ReducePlan p, const T* x, O* y, OpReqType req) {
  using Outer = typename R::template Outer<T>;
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < p.out_size;
       o += int64_t(blockDim.x) * gridDim.x) {
    const int64_t base = p.OutBase(o);
    Outer acc = R::template Identity<Outer>();
    for (int64_t r = 0; r < p.red_size; ++r)
      acc = R::Combine(acc, R::template Map<Outer>(x[base + p.RedOffset(r)]));
    StoreReq(y[o], R::Finalize(acc, p.red_size), req);
  }
}

template <typename R, typename T, typename O>
__global__ void ReduceBlockPerOutputKernel(ReducePlan p, const T* x, O* y, OpReqType req) {
  using Outer = typename R::template Outer<T>;
  __shared__ Outer buf[kGpuThreads];
  const int tid = threadIdx.x;
  for (int64_t o = blockIdx.x; o < p.out_size; o += gridDim.x) {
    const int64_t base = p.OutBase(o);
    Outer acc = R::template Identity<Outer>();
    for (int64_t r = tid; r < p.red_size; r += blockDim.x)
      acc = R::Combine(acc, R::template Map<Outer>(x[base + p.RedOffset(r)]));
    buf[tid] = acc;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
      if (tid < w) buf[tid] = R::Combine(buf[tid], buf[tid + w]);
      __syncthreads();
    }
    if (tid == 0) StoreReq(y[o], R::Finalize(buf[0], p.red_size), req);
    __syncthreads();
  }
}

template <typename Cmp, typename T, typename O>
__global__ void ArgReduceThreadKernel(int64_t outer, int64_t len, int64_t inner, const T* x, O* y,
                                      OpReqType req) {
  using A = AccType<T>;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < outer * inner;
       t += int64_t(blockDim.x) * gridDim.x) {
    const int64_t m = t / inner, n = t - m * inner;
    const T* base = x + m * len * inner + n;
    A best = static_cast<A>(base[0]);
    int64_t at = 0;
    for (int64_t k = 1; k < len; ++k) {
      const A v = static_cast<A>(base[k * inner]);
      if (Cmp::Better(v, best)) best = v, at = k;
    }
    StoreReq(y[t], static_cast<double>(at), req);
  }
}

// One block per contiguous slice (inner == 1): each thread finds the best
// of its strided elements, then pairs combine keeping the earlier index on ties.
template <typename Cmp, typename T, typename O>
__global__ void ArgReduceBlockKernel(int64_t outer, int64_t len, const T* x, O* y, OpReqType req) {
  using A = AccType<T>;
  __shared__ A best[kGpuThreads];
  __shared__ int64_t at[kGpuThreads];
  const int tid = threadIdx.x;
  for (int64_t m = blockIdx.x; m < outer; m += gridDim.x) {
    const T* row = x + m * len;
    A b = A(0);
    int64_t i = -1;  // -1: the thread has no element
    for (int64_t k = tid; k < len; k += blockDim.x) {
      const A v = static_cast<A>(row[k]);
      if (i < 0 || Cmp::Better(v, b)) b = v, i = k;
    }
    best[tid] = b;
    at[tid] = i;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
      if (tid < w) {
        const int64_t j = at[tid + w];
        if (j >= 0) {
          const A v = best[tid + w];
          const bool take = at[tid] < 0 || Cmp::Better(v, best[tid]) ||
                            (!Cmp::Better(best[tid], v) && j < at[tid]);
          if (take) best[tid] = v, at[tid] = j;
        }
      }
      __syncthreads();
    }
    if (tid == 0) StoreReq(y[m], static_cast<double>(at[0]), req);
    __syncthreads();
  }
}

template <bool kIgnoreNaN, typename T, typename Acc>
__global__ void ProdGradKernel(ReducePlan p, const T* x, const T* g, T* gx, Acc* tmp,
                               OpReqType req) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < p.out_size;
       o += int64_t(blockDim.x) * gridDim.x)
    ProdGradOne<kIgnoreNaN>(p, o, x, g, gx, tmp, req);
}

}  // namespace reduce

template <typename R, typename T, typename O>
void RunReduce(gpu, const OpContext& ctx, const ReducePlan& p, const T* x, O* y, OpReqType req) {
  if (req == kNullOp) return;
  cudaStream_t s = ctx.get_stream<cudaStream_t>();
  const bool per_block =
      p.inner_reduced ? p.red_size >= 32 : (p.out_size < 4096 && p.red_size >= 256);
  if (per_block)
    reduce::ReduceBlockPerOutputKernel<R>
        <<<reduce::GpuBlocks(p.out_size, 1), reduce::kGpuThreads, 0, s>>>(p, x, y, req);
  else
    reduce::ReduceThreadPerOutputKernel<R>
        <<<reduce::GpuBlocks(p.out_size, reduce::kGpuThreads), reduce::kGpuThreads, 0, s>>>(p, x, y,
                                                                                            req);
  TS_CUDA_CALL(cudaGetLastError());
}

template <typename Cmp, typename T, typename O>
void RunArgReduce(gpu, const OpContext& ctx, int64_t outer, int64_t len, int64_t inner, const T* x,
                  O* y, OpReqType req) {
  if (req == kNullOp) return;
  cudaStream_t s = ctx.get_stream<cudaStream_t>();
  if (inner == 1 && len >= 256)
    reduce::ArgReduceBlockKernel<Cmp>
        <<<reduce::GpuBlocks(outer, 1), reduce::kGpuThreads, 0, s>>>(outer, len, x, y, req);
  else
    reduce::ArgReduceThreadKernel<Cmp>
        <<<reduce::GpuBlocks(outer * inner, reduce::kGpuThreads), reduce::kGpuThreads, 0, s>>>(
            outer, len, inner, x, y, req);
  TS_CUDA_CALL(cudaGetLastError());
}

template <bool kIgnoreNaN, typename T, typename Acc>
void RunProdGrad(gpu, const OpContext& ctx, const ReducePlan& p, const T* x, const T* g, T* gx,
                 Acc* tmp, OpReqType req) {
  if (req == kNullOp) return;
  reduce::ProdGradKernel<kIgnoreNaN>
      <<<reduce::GpuBlocks(p.out_size, reduce::kGpuThreads), reduce::kGpuThreads, 0,
         ctx.get_stream<cudaStream_t>()>>>(p, x, g, gx, tmp, req);
  TS_CUDA_CALL(cudaGetLastError());
}

}  // namespace tessera::op
