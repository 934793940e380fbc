// 16-bit floating point storage types. Arithmetic happens in float: each value
// converts on load and rounds (to nearest even) on store, as mshadow's half_t
// and PyTorch's c10::Half do on CPU.
#pragma once

#include <cstdint>
#include <cstring>

#include "engine/base/host_device.h"

namespace tessera {

namespace detail {
TS_XINLINE uint32_t FloatBits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}
TS_XINLINE float BitsFloat(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}
}  // namespace detail

// IEEE 754 binary16.
struct float16 {
  uint16_t bits = 0;

  float16() = default;
  TS_XINLINE float16(float f) : bits(FromFloat(f)) {}  // NOLINT: converts like a number
  TS_XINLINE operator float() const { return ToFloat(bits); }

  static TS_XINLINE float16 FromBits(uint16_t b) {
    float16 h;
    h.bits = b;
    return h;
  }

  static TS_XINLINE uint16_t FromFloat(float f) {
    const uint32_t x = detail::FloatBits(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7fffffffu;
    if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN stays NaN
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
    if (abs < 0x38800000u) {
      // Subnormal half (or zero): scale into the 10-bit mantissa with rounding.
      if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
      const uint32_t exp = abs >> 23;
      const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
      const uint32_t shift = 126 - exp;  // 14..24
      uint32_t h = mant >> shift;
      const uint32_t rem = mant & ((1u << shift) - 1);
      const uint32_t half = 1u << (shift - 1);
      if (rem > half || (rem == half && (h & 1u))) ++h;
      return static_cast<uint16_t>(sign | h);
    }
    // Normal: rebias the exponent and round the mantissa to nearest even.
    uint32_t h = ((abs - 0x38000000u) >> 13);
    const uint32_t rem = abs & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }

  static TS_XINLINE float ToFloat(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1fu) return detail::BitsFloat(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
      if (mant == 0) return detail::BitsFloat(sign);
      // Subnormal: normalise into a float.
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      return detail::BitsFloat(sign | ((112u - e) << 23) | ((mant & 0x3ffu) << 13));
    }
    return detail::BitsFloat(sign | ((exp + 112u) << 23) | (mant << 13));
  }
};

// bfloat16: the top half of a float32, rounded to nearest even.
struct bfloat16 {
  uint16_t bits = 0;

  bfloat16() = default;
  TS_XINLINE bfloat16(float f) : bits(FromFloat(f)) {}  // NOLINT: converts like a number
  TS_XINLINE operator float() const { return detail::BitsFloat(static_cast<uint32_t>(bits) << 16); }

  static TS_XINLINE bfloat16 FromBits(uint16_t b) {
    bfloat16 h;
    h.bits = b;
    return h;
  }
  static TS_XINLINE uint16_t FromFloat(float f) {
    const uint32_t x = detail::FloatBits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
      return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
    return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
  }
};

}  // namespace tessera
