// A RandomStream names one op's private random sequence, and the functions
// here turn (stream, element index) into numbers. CPU fills (random.h), GPU
// fills (random_gpu.h) and ops' own kernels (dropout masks, say) all use
// them, so a given element has the same value wherever it is computed.
//
// Mapping: Philox key = seed; Philox block b = counter {b (low word, high
// word), stream_id (low word, high word)}. 32-bit outputs (random bits,
// float uniform and normal) take element i from lane i % 4 of block i / 4;
// normals pair lanes (0,1) and (2,3) through Box-Muller. Doubles need more
// bits: element i takes lanes (2(i%2), 2(i%2)+1) of block i / 2, and a
// double normal pair uses all four lanes of its block.
#pragma once

#include <math.h>  // the C names (sqrtf, logf, ...) are the ones device code also has

#include <cstdint>

#include "engine/resource/philox.h"

namespace tessera::resource {

struct RandomStream {
  uint64_t seed = 0;
  uint64_t stream_id = 0;
};

TS_HOST_DEVICE inline PhiloxCounter RandomBlock(const RandomStream& s, uint64_t block) {
  const PhiloxCounter ctr{{static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                           static_cast<uint32_t>(s.stream_id),
                           static_cast<uint32_t>(s.stream_id >> 32)}};
  const PhiloxKey key{{static_cast<uint32_t>(s.seed), static_cast<uint32_t>(s.seed >> 32)}};
  return Philox4x32_10(ctr, key);
}

// ---- Conversions from random bits.

// [0, 1) from the top 24 bits: every value is exact in float.
TS_HOST_DEVICE inline float UnitFloat(uint32_t x) {
  return static_cast<float>(x >> 8) * 0x1p-24f;
}
// (0, 1], for logarithms.
TS_HOST_DEVICE inline float UnitFloatNonZero(uint32_t x) {
  return static_cast<float>((x >> 8) + 1) * 0x1p-24f;
}
// [0, 1) and (0, 1] from 53 of 64 bits.
TS_HOST_DEVICE inline double UnitDouble(uint32_t hi, uint32_t lo) {
  return static_cast<double>(((static_cast<uint64_t>(hi) << 32) | lo) >> 11) * 0x1p-53;
}
TS_HOST_DEVICE inline double UnitDoubleNonZero(uint32_t hi, uint32_t lo) {
  return static_cast<double>((((static_cast<uint64_t>(hi) << 32) | lo) >> 11) + 1) * 0x1p-53;
}

// a * b + c with both operations rounded, on every device: nvcc would
// otherwise fuse them into one FMA and GPU results would drift from CPU ones.
TS_HOST_DEVICE inline float MulAdd(float a, float b, float c) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(__fmul_rn(a, b), c);
#else
  return a * b + c;
#endif
}
TS_HOST_DEVICE inline double MulAdd(double a, double b, double c) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(__dmul_rn(a, b), c);
#else
  return a * b + c;
#endif
}

// Box-Muller: two independent standard normals from u1 in (0, 1], u2 in [0, 1).
TS_HOST_DEVICE inline void BoxMuller(float u1, float u2, float* z0, float* z1) {
  const float r = sqrtf(-2.0f * logf(u1));
  const float theta = 6.28318530717958647692f * u2;
  *z0 = r * cosf(theta);
  *z1 = r * sinf(theta);
}
TS_HOST_DEVICE inline void BoxMuller(double u1, double u2, double* z0, double* z1) {
  const double r = sqrt(-2.0 * log(u1));
  const double theta = 6.28318530717958647692 * u2;
  *z0 = r * cos(theta);
  *z1 = r * sin(theta);
}

// ---- One element at a time, for ops' own kernels. Each call runs a whole
// Philox block; loops over many elements should use the block writers below.

TS_HOST_DEVICE inline uint32_t RandomBits(const RandomStream& s, uint64_t i) {
  return RandomBlock(s, i / 4).v[i % 4];
}
TS_HOST_DEVICE inline float RandomUniformFloat(const RandomStream& s, uint64_t i) {
  return UnitFloat(RandomBits(s, i));
}

// ---- Block writers: write the elements of fill `out[0, n)` that block b
// produces. The CPU and GPU fills are loops over these.

TS_HOST_DEVICE inline void WriteBitsBlock(const RandomStream& s, uint64_t b, uint32_t* out,
                                          uint64_t n) {
  const PhiloxCounter r = RandomBlock(s, b);
  for (uint64_t lane = 0, i = 4 * b; lane < 4 && i < n; ++lane, ++i) out[i] = r.v[lane];
}

// out[i] = lo + u * scale, scale = hi - lo.
TS_HOST_DEVICE inline void WriteUniformBlock(const RandomStream& s, uint64_t b, float* out,
                                             uint64_t n, float lo, float scale) {
  const PhiloxCounter r = RandomBlock(s, b);
  for (uint64_t lane = 0, i = 4 * b; lane < 4 && i < n; ++lane, ++i) {
    out[i] = MulAdd(UnitFloat(r.v[lane]), scale, lo);
  }
}
TS_HOST_DEVICE inline void WriteUniformBlock(const RandomStream& s, uint64_t b, double* out,
                                             uint64_t n, double lo, double scale) {
  const PhiloxCounter r = RandomBlock(s, b);
  for (uint64_t pair = 0, i = 2 * b; pair < 2 && i < n; ++pair, ++i) {
    out[i] = MulAdd(UnitDouble(r.v[2 * pair], r.v[2 * pair + 1]), scale, lo);
  }
}

TS_HOST_DEVICE inline void WriteNormalBlock(const RandomStream& s, uint64_t b, float* out,
                                            uint64_t n, float mean, float stddev) {
  const PhiloxCounter r = RandomBlock(s, b);
  float z[4];
  BoxMuller(UnitFloatNonZero(r.v[0]), UnitFloat(r.v[1]), &z[0], &z[1]);
  BoxMuller(UnitFloatNonZero(r.v[2]), UnitFloat(r.v[3]), &z[2], &z[3]);
  for (uint64_t lane = 0, i = 4 * b; lane < 4 && i < n; ++lane, ++i) {
    out[i] = MulAdd(z[lane], stddev, mean);
  }
}
TS_HOST_DEVICE inline void WriteNormalBlock(const RandomStream& s, uint64_t b, double* out,
                                            uint64_t n, double mean, double stddev) {
  const PhiloxCounter r = RandomBlock(s, b);
  double z[2];
  BoxMuller(UnitDoubleNonZero(r.v[0], r.v[1]), UnitDouble(r.v[2], r.v[3]), &z[0], &z[1]);
  for (uint64_t k = 0, i = 2 * b; k < 2 && i < n; ++k, ++i) out[i] = MulAdd(z[k], stddev, mean);
}

// Philox blocks a fill of n elements of a type with `per_block` elements each.
TS_HOST_DEVICE inline uint64_t NumRandomBlocks(uint64_t n, uint64_t per_block) {
  return (n + per_block - 1) / per_block;
}

}  // namespace tessera::resource
