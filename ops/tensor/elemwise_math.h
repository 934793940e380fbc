// Device-safe scalar math for the elementwise operators: float and double
// overloads that call the C math library on the host and CUDA's math
// functions on the device (the same names, ::expf / ::exp, exist on both), so
// one element functor serves both. Functors compute in AccType<T>: float for
// the 16-bit floats.
#pragma once

#include <math.h>

#include <bit>
#include <cstdint>
#include <type_traits>

#include "engine/base/host_device.h"

namespace tessera::op::math {

#define TS_ELEMWISE_MATH_UNARY(name, fname, dname) \
  TS_XINLINE float name(float x) {                 \
    return ::fname(x);                             \
  }                                                \
  TS_XINLINE double name(double x) {               \
    return ::dname(x);                             \
  }

TS_ELEMWISE_MATH_UNARY(exp, expf, exp)
TS_ELEMWISE_MATH_UNARY(expm1, expm1f, expm1)
TS_ELEMWISE_MATH_UNARY(log, logf, log)
TS_ELEMWISE_MATH_UNARY(log1p, log1pf, log1p)
TS_ELEMWISE_MATH_UNARY(log2, log2f, log2)
TS_ELEMWISE_MATH_UNARY(log10, log10f, log10)
TS_ELEMWISE_MATH_UNARY(sqrt, sqrtf, sqrt)
TS_ELEMWISE_MATH_UNARY(cbrt, cbrtf, cbrt)
TS_ELEMWISE_MATH_UNARY(sin, sinf, sin)
TS_ELEMWISE_MATH_UNARY(cos, cosf, cos)
TS_ELEMWISE_MATH_UNARY(tan, tanf, tan)
TS_ELEMWISE_MATH_UNARY(asin, asinf, asin)
TS_ELEMWISE_MATH_UNARY(acos, acosf, acos)
TS_ELEMWISE_MATH_UNARY(atan, atanf, atan)
TS_ELEMWISE_MATH_UNARY(sinh, sinhf, sinh)
TS_ELEMWISE_MATH_UNARY(cosh, coshf, cosh)
TS_ELEMWISE_MATH_UNARY(asinh, asinhf, asinh)
TS_ELEMWISE_MATH_UNARY(acosh, acoshf, acosh)
TS_ELEMWISE_MATH_UNARY(atanh, atanhf, atanh)
TS_ELEMWISE_MATH_UNARY(erf, erff, erf)
TS_ELEMWISE_MATH_UNARY(tgamma, tgammaf, tgamma)
TS_ELEMWISE_MATH_UNARY(floor, floorf, floor)
TS_ELEMWISE_MATH_UNARY(ceil, ceilf, ceil)
TS_ELEMWISE_MATH_UNARY(round, roundf, round)
TS_ELEMWISE_MATH_UNARY(rint, rintf, rint)
TS_ELEMWISE_MATH_UNARY(trunc, truncf, trunc)
TS_ELEMWISE_MATH_UNARY(fabs, fabsf, fabs)
#undef TS_ELEMWISE_MATH_UNARY

#ifndef __CUDA_ARCH__
namespace host {

// exp(y) for float y in [-20, 20], branch-free so that a loop over an array
// vectorises (glibc's expf is a call per element): y = k ln2 + r with
// |r| <= ln2/2 (ln2 split in two, Cody and Waite's reduction), exp(r) by its
// Taylor series to r^7 (truncation below 6e-9), 2^k built in the exponent
// bits. Within 2 ulp of the true value.
inline __attribute__((always_inline)) float ExpSmallRange(float y) {
  const float kRound = 12582912.f;  // 1.5 * 2^23: adding it rounds to an integer
  const float kf = (y * 1.44269504088896341f + kRound) - kRound;
  const float r = (y - kf * 0.693359375f) - kf * -2.12194440e-4f;
  float p = 1.f / 5040;
  p = p * r + 1.f / 720;
  p = p * r + 1.f / 120;
  p = p * r + 1.f / 24;
  p = p * r + 1.f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.f;
  p = p * r + 1.f;
  return p * std::bit_cast<float>((static_cast<int32_t>(kf) + 127) << 23);
}

// c ? a : b through bit masks: GCC turns a conditional on floats into a
// branch (SSE2 has no blend), which stops a loop from vectorising.
inline __attribute__((always_inline)) float Select(bool c, float a, float b) {
  const uint32_t m = 0u - static_cast<uint32_t>(c);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(a) & m) | (std::bit_cast<uint32_t>(b) & ~m));
}

// tanh for float, branch-free (both halves computed, one selected) for the
// same reason; within 3 ulp of the true value (tests/cpp/elemwise_test.cc).
// |x| < 0.55: the odd Taylor series to x^17 (truncation below 6e-9 relative);
// beyond: 1 - 2 / (exp(2|x|) + 1), which stays above 0.5 there, with |x|
// capped at 10 where the float result is 1. A NaN fails both tests and
// keeps `small`, a NaN.
inline __attribute__((always_inline)) float TanhFloat(float x) {
  const float a = __builtin_fabsf(x);
  const float z = a * a;
  float s = 6404582.f / 10854718875.f;
  s = s * z - 929569.f / 638512875.f;
  s = s * z + 21844.f / 6081075.f;
  s = s * z - 1382.f / 155925.f;
  s = s * z + 62.f / 2835.f;
  s = s * z - 17.f / 315.f;
  s = s * z + 2.f / 15.f;
  s = s * z - 1.f / 3.f;
  const float small = a + a * z * s;
  const float capped = Select(a >= 10.f, 10.f, a);
  const float large = 1.f - 2.f / (ExpSmallRange(2.f * capped) + 1.f);
  return __builtin_copysignf(Select(a >= 0.55f, large, small), x);
}

}  // namespace host
#endif

TS_XINLINE float tanh(float x) {
#ifdef __CUDA_ARCH__
  return ::tanhf(x);
#else
  return host::TanhFloat(x);
#endif
}
TS_XINLINE double tanh(double x) {
  return ::tanh(x);
}

TS_XINLINE float pow(float x, float y) {
  return ::powf(x, y);
}
TS_XINLINE double pow(double x, double y) {
  return ::pow(x, y);
}
TS_XINLINE float fmod(float x, float y) {
  return ::fmodf(x, y);
}
TS_XINLINE double fmod(double x, double y) {
  return ::fmod(x, y);
}
TS_XINLINE float hypot(float x, float y) {
  return ::hypotf(x, y);
}
TS_XINLINE double hypot(double x, double y) {
  return ::hypot(x, y);
}

// lgamma: glibc's lgamma writes the global `signgam`, a data race when two
// threads call it; lgamma_r does not.
TS_XINLINE float lgamma(float x) {
#ifdef __CUDA_ARCH__
  return ::lgammaf(x);
#else
  int sign;
  return ::lgammaf_r(x, &sign);
#endif
}
TS_XINLINE double lgamma(double x) {
#ifdef __CUDA_ARCH__
  return ::lgamma(x);
#else
  int sign;
  return ::lgamma_r(x, &sign);
#endif
}

// NaN test for any element type (integers are never NaN).
template <typename T>
TS_XINLINE bool isnan(T x) {
  if constexpr (std::is_floating_point_v<T>)
    return x != x;
  else
    return false;
}

// The inverse error function: Giles' single-precision approximation ("Approximating
// the erfinv function", GPU Computing Gems, 2011), then two Newton steps on
// erf(y) = x, which bring doubles to full precision. erfinv(+-1) = +-inf;
// outside [-1, 1] NaN.
template <typename T>
TS_XINLINE T erfinv(T x) {
  if (!(x > T(-1) && x < T(1))) {
    if (x == T(1)) return T(1) / T(0);
    if (x == T(-1)) return T(-1) / T(0);
    return T(0) / T(0);
  }
  T w = -log((T(1) - x) * (T(1) + x)), p;
  if (w < T(5)) {
    w = w - T(2.5);
    p = T(2.81022636e-08);
    p = T(3.43273939e-07) + p * w;
    p = T(-3.5233877e-06) + p * w;
    p = T(-4.39150654e-06) + p * w;
    p = T(0.00021858087) + p * w;
    p = T(-0.00125372503) + p * w;
    p = T(-0.00417768164) + p * w;
    p = T(0.246640727) + p * w;
    p = T(1.50140941) + p * w;
  } else {
    w = sqrt(w) - T(3);
    p = T(-0.000200214257);
    p = T(0.000100950558) + p * w;
    p = T(0.00134934322) + p * w;
    p = T(-0.00367342844) + p * w;
    p = T(0.00573950773) + p * w;
    p = T(-0.0076224613) + p * w;
    p = T(0.00943887047) + p * w;
    p = T(1.00167406) + p * w;
    p = T(2.83297682) + p * w;
  }
  T y = p * x;
  const T two_over_sqrt_pi = T(1.128379167095512573896);
  for (int i = 0; i < 2; ++i) y = y - (erf(y) - x) / (two_over_sqrt_pi * exp(-y * y));
  return y;
}

// The digamma function psi(x) = d/dx ln|gamma(x)|, for the gradients of
// gamma and gammaln: reflection below 0.5, the recurrence psi(x) = psi(x+1) -
// 1/x up to x >= 6, then the asymptotic series. Poles (0, -1, ...) give NaN.
template <typename T>
TS_XINLINE T digamma(T x) {
  const T pi = T(3.14159265358979323846);
  T result = 0;
  if (x <= T(0) && floor(x) == x) return T(NAN);
  if (x < T(0.5)) {
    // psi(x) = psi(1 - x) - pi / tan(pi x)
    result = -pi / tan(pi * x);
    x = T(1) - x;
  }
  while (x < T(6)) {
    result -= T(1) / x;
    x += T(1);
  }
  const T inv = T(1) / x, inv2 = inv * inv;
  // ln x - 1/(2x) - 1/(12x^2) + 1/(120x^4) - 1/(252x^6) + 1/(240x^8) - 1/(132x^10)
  const T series =
      inv2 * (T(1) / 12 - inv2 * (T(1) / 120 -
                                  inv2 * (T(1) / 252 - inv2 * (T(1) / 240 - inv2 * (T(1) / 132)))));
  return result + log(x) - T(0.5) * inv - series;
}

}  // namespace tessera::op::math
