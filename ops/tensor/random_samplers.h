// Samplers of the distributions whose draws take a varying number of random
// numbers (rejection methods): exponential, gamma, Poisson, negative
// binomial. Element i of an output draws from its own sub-sequence of the
// op's stream (Philox blocks (i << 20) + k), so its value depends only on
// (seed, stream, i), never on the thread or device that computes it.
// Computed in double; outputs round. Device-safe: the C math names, and every
// a * b + c through resource::MulAdd, so nvcc fuses none of them into an FMA
// the CPU would not use (the GPU's log, cos, pow and lgamma may still differ
// from glibc's in the last bit).
#pragma once

#include <math.h>

#include <cstdint>

#include "engine/base/host_device.h"
#include "engine/resource/random_stream.h"

namespace tessera::op {

// The uniform and normal draws of one element, in order.
class ElementDraws {
 public:
  TS_XINLINE ElementDraws(const resource::RandomStream& s, uint64_t element)
      : s_(s), base_(element << 20) {}

  // [0, 1), 53 bits.
  TS_XINLINE double Uniform() {
    Refill();
    const double u = resource::UnitDouble(cur_.v[2 * pair_], cur_.v[2 * pair_ + 1]);
    ++pair_;
    return u;
  }
  // (0, 1], for logarithms.
  TS_XINLINE double UniformNonZero() { return 1.0 - Uniform(); }
  // Standard normal (Box-Muller; one of the pair is kept).
  TS_XINLINE double Normal() {
    const double r = sqrt(-2.0 * log(UniformNonZero()));
    return r * cos(6.28318530717958647692 * Uniform());
  }

 private:
  TS_XINLINE void Refill() {
    if (pair_ < 2) return;
    cur_ = resource::RandomBlock(s_, base_ + block_++);
    pair_ = 0;
  }
  resource::RandomStream s_;
  uint64_t base_, block_ = 0;
  resource::PhiloxCounter cur_{};
  int pair_ = 2;
};

// Exponential with rate lam (mean 1 / lam).
TS_XINLINE double SampleExponential(ElementDraws& d, double lam) {
  return -log(d.UniformNonZero()) / lam;
}

// Gamma with shape alpha and scale beta (mean alpha beta): Marsaglia and
// Tsang's method (2000); alpha < 1 through alpha + 1 and U^(1 / alpha).
TS_XINLINE double SampleGamma(ElementDraws& d, double alpha, double beta) {
  using resource::MulAdd;
  if (!(alpha > 0 && alpha < 1e300)) return NAN;  // callers check first
  const double boost = alpha < 1 ? pow(d.UniformNonZero(), 1.0 / alpha) : 1.0;
  const double a = alpha < 1 ? alpha + 1 : alpha;
  const double dd = a - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * dd);
  for (;;) {
    double x, v;
    do {
      x = d.Normal();
      v = MulAdd(c, x, 1.0);
    } while (v <= 0);
    v = v * v * v;
    const double u = d.Uniform();
    // 1 - 0.0331 x^4 and x^2 / 2 + dd (1 - v + log v), each product rounded.
    if (u < MulAdd(-(0.0331 * x * x * x), x, 1.0)) return dd * v * beta * boost;
    if (log(u) < MulAdd(dd, 1.0 - v + log(v), 0.5 * x * x)) return dd * v * beta * boost;
  }
}

// Poisson with mean lam: multiplication of uniforms below 10, else Hormann's
// transformed rejection with squeeze (PTRS, 1993), as NumPy.
TS_XINLINE double SamplePoisson(ElementDraws& d, double lam) {
  using resource::MulAdd;
  if (!(lam < 1e300)) return lam;  // NaN or infinite: no draw (callers check first)
  if (lam <= 0) return 0;
  if (lam < 10) {
    const double limit = exp(-lam);
    double prod = d.Uniform();
    int64_t k = 0;
    while (prod > limit) {
      ++k;
      prod *= d.Uniform();
    }
    return double(k);
  }
  const double slam = sqrt(lam), loglam = log(lam);
  const double b = MulAdd(2.53, slam, 0.931), a = MulAdd(0.02483, b, -0.059);
  const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
  for (;;) {
    const double u = d.Uniform() - 0.5, v = d.Uniform(), us = 0.5 - fabs(u);
    const double k = floor(MulAdd(2 * a / us + b, u, lam) + 0.43);
    if (us >= 0.07 && v <= vr) return k;
    if (k < 0 || (us < 0.013 && v > us)) continue;
    if (log(v) + log(inv_alpha) - log(a / (us * us) + b) <= MulAdd(k, loglam, -lam) - lgamma(k + 1))
      return k;
  }
}

// Failures before the k-th success with success probability p: Poisson of
// a Gamma(k, (1 - p) / p) rate.
TS_XINLINE double SampleNegativeBinomial(ElementDraws& d, double k, double p) {
  if (p >= 1) return 0;
  return SamplePoisson(d, SampleGamma(d, k, (1 - p) / p));
}

// Mean mu and dispersion alpha (variance mu + alpha mu^2): Poisson of a
// Gamma(1 / alpha, alpha mu) rate; alpha = 0 is Poisson(mu).
TS_XINLINE double SampleGeneralizedNegativeBinomial(ElementDraws& d, double mu, double alpha) {
  if (alpha <= 0) return SamplePoisson(d, mu);
  return SamplePoisson(d, SampleGamma(d, 1.0 / alpha, alpha * mu));
}

}  // namespace tessera::op
