// Samplers of the distributions whose draws take a varying number of random
// numbers (rejection methods): exponential, gamma, Poisson, negative
// binomial. Element i of an output draws from its own sub-sequence of the
// op's stream (Philox blocks (i << 20) + k), so its value depends only on
// (seed, stream, i), never on the thread that computes it. Computed in
// double; outputs round.
#pragma once

#include <cmath>
#include <cstdint>

#include "engine/resource/random_stream.h"

namespace tessera::op {

// The uniform and normal draws of one element, in order.
class ElementDraws {
 public:
  ElementDraws(const resource::RandomStream& s, uint64_t element) : s_(s), base_(element << 20) {}

  // [0, 1), 53 bits.
  double Uniform() {
    Refill();
    const double u = resource::UnitDouble(cur_.v[2 * pair_], cur_.v[2 * pair_ + 1]);
    ++pair_;
    return u;
  }
  // (0, 1], for logarithms.
  double UniformNonZero() { return 1.0 - Uniform(); }
  // Standard normal (Box-Muller; one of the pair is kept).
  double Normal() {
    const double r = std::sqrt(-2.0 * std::log(UniformNonZero()));
    return r * std::cos(2.0 * M_PI * Uniform());
  }

 private:
  void Refill() {
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
inline double SampleExponential(ElementDraws& d, double lam) {
  return -std::log(d.UniformNonZero()) / lam;
}

// Gamma with shape alpha and scale beta (mean alpha beta): Marsaglia and
// Tsang's method (2000); alpha < 1 through alpha + 1 and U^(1 / alpha).
inline double SampleGamma(ElementDraws& d, double alpha, double beta) {
  if (!(alpha > 0 && alpha < 1e300)) return std::nan("");  // callers check first
  const double boost = alpha < 1 ? std::pow(d.UniformNonZero(), 1.0 / alpha) : 1.0;
  const double a = alpha < 1 ? alpha + 1 : alpha;
  const double dd = a - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * dd);
  for (;;) {
    double x, v;
    do {
      x = d.Normal();
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = d.Uniform();
    if (u < 1.0 - 0.0331 * x * x * x * x) return dd * v * beta * boost;
    if (std::log(u) < 0.5 * x * x + dd * (1.0 - v + std::log(v))) return dd * v * beta * boost;
  }
}

// Poisson with mean lam: multiplication of uniforms below 10, else Hormann's
// transformed rejection with squeeze (PTRS, 1993), as NumPy.
inline double SamplePoisson(ElementDraws& d, double lam) {
  if (!(lam < 1e300)) return lam;  // NaN or infinite: no draw (callers check first)
  if (lam <= 0) return 0;
  if (lam < 10) {
    const double limit = std::exp(-lam);
    double prod = d.Uniform();
    int64_t k = 0;
    while (prod > limit) {
      ++k;
      prod *= d.Uniform();
    }
    return double(k);
  }
  const double slam = std::sqrt(lam), loglam = std::log(lam);
  const double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
  const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
  for (;;) {
    const double u = d.Uniform() - 0.5, v = d.Uniform(), us = 0.5 - std::fabs(u);
    const double k = std::floor((2 * a / us + b) * u + lam + 0.43);
    if (us >= 0.07 && v <= vr) return k;
    if (k < 0 || (us < 0.013 && v > us)) continue;
    if (std::log(v) + std::log(inv_alpha) - std::log(a / (us * us) + b) <=
        -lam + k * loglam - std::lgamma(k + 1))
      return k;
  }
}

// Failures before the k-th success with success probability p: Poisson of
// a Gamma(k, (1 - p) / p) rate.
inline double SampleNegativeBinomial(ElementDraws& d, double k, double p) {
  if (p >= 1) return 0;
  return SamplePoisson(d, SampleGamma(d, k, (1 - p) / p));
}

// Mean mu and dispersion alpha (variance mu + alpha mu^2): Poisson of a
// Gamma(1 / alpha, alpha mu) rate; alpha = 0 is Poisson(mu).
inline double SampleGeneralizedNegativeBinomial(ElementDraws& d, double mu, double alpha) {
  if (alpha <= 0) return SamplePoisson(d, mu);
  return SamplePoisson(d, SampleGamma(d, 1.0 / alpha, alpha * mu));
}

}  // namespace tessera::op
