// The GPU half of Kernel<OP, xpu>::Launch; include from .cu files only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>
#include <utility>

#include "engine/base/cuda_utils.h"
#include "engine/op/kernel_launch.h"

namespace tessera::op {

template <typename OP, typename... Args>
__global__ void KernelGridStride(int64_t n, Args... args) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x)
    OP::Map(i, args...);
}

// N elements of T in one aligned 16-byte (or smaller) load or store.
template <typename T, int N>
struct alignas(sizeof(T) * N) VecOf {
  T v[N];
};

// Vector v of out and of each input: loaded whole, OP::Map applied to its N
// elements in registers, stored whole. out is read first only for kAddTo.
template <typename OP, int N, bool kReadOut, typename T, typename... In, size_t... I>
__device__ __forceinline__ void MapVector(int64_t v, T* out, std::index_sequence<I...>,
                                          const In*... in) {
  VecOf<T, N> o;
  if constexpr (kReadOut) o = reinterpret_cast<const VecOf<T, N>*>(out)[v];
  const VecOf<T, N> x[sizeof...(In)] = {reinterpret_cast<const VecOf<T, N>*>(in)[v]...};
#pragma unroll
  for (int j = 0; j < N; ++j) OP::Map(j, o.v, x[I].v...);
  reinterpret_cast<VecOf<T, N>*>(out)[v] = o;
}

template <typename OP, int N, bool kReadOut, typename T, typename... In>
__global__ void KernelVectorized(int64_t nvec, T* out, const In*... in) {
  for (int64_t v = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; v < nvec;
       v += int64_t(blockDim.x) * gridDim.x)
    MapVector<OP, N, kReadOut>(v, out, std::index_sequence_for<In...>{}, in...);
}

template <typename OP>
struct Kernel<OP, gpu> {
  static constexpr int kThreads = 256;
  template <typename... Args>
  static void Launch(const RunContext& ctx, int64_t n, Args... args) {
    if (n <= 0) return;
    const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, 65535 * 8);
    KernelGridStride<OP, Args...>
        <<<static_cast<unsigned>(blocks), kThreads, 0, ctx.get_stream<cudaStream_t>()>>>(n,
                                                                                         args...);
    TS_CUDA_CALL(cudaGetLastError());
  }

  // Launch for a map whose element i reads in[k][i] and writes out[i] only,
  // all of one element size: 16 bytes per load and store where every array
  // is 16-byte aligned (the memory's bandwidth needs wide accesses), the
  // tail and unaligned arrays through Launch. kReadOut: the map reads
  // out[i] too (req kAddTo). An output may be one of the inputs (in place).
  // Every array has the element type T.
  template <bool kReadOut, typename T, typename... In>
  static void LaunchVectorized(const RunContext& ctx, int64_t n, T* out, const In*... in) {
    constexpr int N = 16 / sizeof(T) > 0 ? static_cast<int>(16 / sizeof(T)) : 1;
    static_assert((std::is_same_v<In, T> && ...), "one element type for every array");
    const bool aligned = reinterpret_cast<uintptr_t>(out) % 16 == 0 &&
                         ((reinterpret_cast<uintptr_t>(in) % 16 == 0) && ...);
    if (N == 1 || !aligned || n < N) return Launch(ctx, n, out, in...);
    const int64_t nvec = n / N;
    const int64_t blocks = std::min<int64_t>((nvec + kThreads - 1) / kThreads, 65535 * 8);
    KernelVectorized<OP, N, kReadOut, T, In...>
        <<<static_cast<unsigned>(blocks), kThreads, 0, ctx.get_stream<cudaStream_t>()>>>(nvec, out,
                                                                                         in...);
    TS_CUDA_CALL(cudaGetLastError());
    const int64_t done = nvec * N;
    if (done < n) Launch(ctx, n - done, out + done, (in + done)...);
  }
};

}  // namespace tessera::op
