// TS_HOST_DEVICE marks small functions that both the host compiler and nvcc
// compile: element functors, half-precision conversions, shape arithmetic.
#pragma once

#ifndef TS_HOST_DEVICE
#ifdef __CUDACC__
#define TS_HOST_DEVICE __host__ __device__
#else
#define TS_HOST_DEVICE
#endif
#endif

#ifdef __CUDACC__
#define TS_XINLINE __host__ __device__ __forceinline__
#else
#define TS_XINLINE inline __attribute__((always_inline))
#endif
