// Device-safe scalar math for the elementwise operators: float and double
// overloads that call the C math library on the host and CUDA's math
// functions on the device (the same names, ::expf / ::exp, exist on both), so
// one element functor serves both. Functors compute in AccType<T>: float for
// the 16-bit floats.
#pragma once

#include <math.h>

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
TS_ELEMWISE_MATH_UNARY(tanh, tanhf, tanh)
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
