// MXNet's other samplers, shared by the CPU (random_dist_op.cc) and GPU
// (random_dist_op.cu) registrations: _random_exponential, _random_gamma,
// _random_poisson, _random_negative_binomial,
// _random_generalized_negative_binomial (scalar parameters) and the
// _sample_* family (parameters per row as arrays: the output is the
// parameters' shape followed by `shape`). Every element draws from its own
// sub-sequence of the op's stream (random_samplers.h), so results repeat with
// mx.random.seed whatever the thread count, and gpu(0) draws what cpu(0) does
// for one seed (to the last bits of the GPU's math functions). Array
// parameters are checked on the host first (on the GPU after a copy).
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "ops/tensor/host_values.h"
#include "ops/tensor/random_op-inl.h"
#include "ops/tensor/random_samplers.h"

namespace tessera::op {

enum DistKind {
  kUniformDist,
  kNormalDist,
  kExponential,
  kGamma,
  kPoisson,
  kNegBinomial,
  kGenNegBinomial
};

// Names (sample-op inputs and _random_* parameters), defaults and docs.
struct DistSpec {
  const char* a;
  const char* b;  // "" for one-parameter distributions
  double default_a, default_b;
  const char* a_doc;
  const char* b_doc;
};

inline constexpr DistSpec kDistSpecs[] = {
    {"low", "high", 0, 1, "Lower bound.", "Upper bound."},
    {"mu", "sigma", 0, 1, "Mean.", "Standard deviation."},
    {"lam", "", 1, 0, "Rate (lambda) of the distribution.", ""},
    {"alpha", "beta", 1, 1, "Shape (alpha).", "Scale (beta)."},
    {"lam", "", 1, 0, "Mean (lambda) of the distribution.", ""},
    {"k", "p", 1, 1, "Number of successes to wait for.", "Success probability of a trial."},
    {"mu", "alpha", 1, 1, "Mean.", "Dispersion (variance mu + alpha mu^2)."},
};

inline bool HasB(DistKind k) {
  return kDistSpecs[k].b[0] != '\0';
}

// Why (a, b) cannot parameterise distribution k, or null. Both must be
// finite: an infinite rate has no draws, and a rejection sampler on one
// would never stop.
inline const char* InvalidDistParams(DistKind k, double a, double b) {
  if (!std::isfinite(a) || !std::isfinite(b)) return "parameters must be finite";
  switch (k) {
    case kUniformDist:
      return a <= b ? nullptr : "low exceeds high";
    case kNormalDist:
      return b >= 0 ? nullptr : "sigma is negative";
    case kExponential:
      return a > 0 ? nullptr : "lam must be positive";
    case kGamma:
      return a > 0 && b > 0 ? nullptr : "alpha and beta must be positive";
    case kPoisson:
      return a >= 0 ? nullptr : "lam is negative";
    case kNegBinomial:
      return a > 0 && b > 0 && b <= 1 ? nullptr : "k must be positive and p in (0, 1]";
    case kGenNegBinomial:
      return a >= 0 && b >= 0 ? nullptr : "mu and alpha must not be negative";
  }
  return "unknown distribution";
}

// One draw of distribution `kind` with parameters (a, b).
TS_XINLINE double DrawDist(int kind, ElementDraws& d, double a, double b) {
  switch (kind) {
    case kUniformDist:
      return resource::MulAdd(b - a, d.Uniform(), a);
    case kNormalDist:
      return resource::MulAdd(b, d.Normal(), a);
    case kExponential:
      return SampleExponential(d, a);
    case kGamma:
      return SampleGamma(d, a, b);
    case kPoisson:
      return SamplePoisson(d, a);
    case kNegBinomial:
      return SampleNegativeBinomial(d, a, b);
    default:
      return SampleGeneralizedNegativeBinomial(d, a, b);
  }
}

// Element i: parameters a[i / per_row] and b[i / per_row], or the scalars
// (a0, b0) where the arrays are null.
struct DistDraw {
  template <typename T, typename P>
  TS_XINLINE static void Map(int64_t i, resource::RandomStream s, int kind, T* out, OpReqType req,
                             const P* a, const P* b, double a0, double b0, int64_t per_row) {
    ElementDraws d(s, uint64_t(i));
    const int64_t row = i / per_row;
    const double v = DrawDist(kind, d, a ? double(a[row]) : a0, b ? double(b[row]) : b0);
    out[i] = req == kAddTo ? T(double(out[i]) + v) : T(v);
  }
};

// ---------------------------------------------------------------------------
// _random_*: scalar parameters.

template <int kDist>
struct RandomDistParam : Params<RandomDistParam<kDist>> {
  double a = kDistSpecs[kDist].default_a, b = kDistSpecs[kDist].default_b;
  Shape shape;
  std::string ctx;
  std::optional<DType> dtype;
  static void Declare(ParamDecl<RandomDistParam>& d) {
    const DistSpec& s = kDistSpecs[kDist];
    d.field(s.a, &RandomDistParam::a).set_default(s.default_a).describe(s.a_doc);
    if (HasB(DistKind(kDist)))
      d.field(s.b, &RandomDistParam::b).set_default(s.default_b).describe(s.b_doc);
    DeclareRandomOutputFields(d, "float32");
  }
  void Check(const std::string& op) const {
    const DistSpec& s = kDistSpecs[kDist];
    if (const char* why = InvalidDistParams(DistKind(kDist), a, b))
      TS_THROW << op << ": " << why << " (" << s.a << " = " << a
               << (HasB(DistKind(kDist)) ? std::string(", ") + s.b + " = " + std::to_string(b)
                                         : std::string())
               << ")";
  }
};

template <int kDist, typename xpu>
void RandomDistCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>&,
                       const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<RandomDistParam<kDist>>(attrs);
  const resource::RandomStream s = ctx.requested.at(0).get_random();
  SwitchFloatDType(out[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const float* none = nullptr;
    Kernel<DistDraw, xpu>::Launch(ctx.run_ctx, out[0].Size(), s, int(kDist), out[0].dptr<T>(),
                                  req[0], none, none, p.a, p.b, int64_t{1});
  });
}

// ---------------------------------------------------------------------------
// _sample_*: parameters per row, as arrays of one shape.

struct SampleParam : Params<SampleParam> {
  Shape shape;
  std::optional<DType> dtype;
  static void Declare(ParamDecl<SampleParam>& d) {
    d.field("shape", &SampleParam::shape)
        .set_default(Shape())
        .describe(
            "The samples drawn for each parameter row; the output is the parameters' "
            "shape followed by this one.");
    d.field("dtype", &SampleParam::dtype)
        .set_default(std::nullopt)
        .describe("The output's dtype (float16, float32, float64). None: the parameters'.");
  }
};

inline int64_t DrawsPerRow(const NodeAttrs& attrs) {
  const Shape& s = ParamsOf<SampleParam>(attrs).shape;
  return s.ndim() == 0 ? 1 : s.Size();
}

// Every parameter row checked before any draw (errors cannot leave the
// threads that draw).
template <typename xpu>
void CheckParameterRows(const NodeAttrs& attrs, const RunContext& rctx, DistKind kind,
                        const std::vector<TBlob>& in) {
  const std::vector<double> a = HostValues<xpu>(rctx, in[0]);
  const std::vector<double> b = in.size() == 2 ? HostValues<xpu>(rctx, in[1]) : a;
  const DistSpec& s = kDistSpecs[kind];
  for (size_t r = 0; r < a.size(); ++r) {
    const double rb = in.size() == 2 ? b[r] : 0.0;
    if (const char* why = InvalidDistParams(kind, a[r], rb))
      TS_THROW << OpLabel(attrs) << ": " << why << " in parameter row " << r << " (" << s.a << " = "
               << a[r]
               << (in.size() == 2 ? std::string(", ") + s.b + " = " + std::to_string(rb)
                                  : std::string())
               << ")";
  }
}

template <int kDist, typename xpu>
void SampleCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  CheckParameterRows<xpu>(attrs, ctx.run_ctx, DistKind(kDist), in);
  const resource::RandomStream s = ctx.requested.at(0).get_random();
  SwitchFloatDType(in[0].dtype(), [&](auto ptag) {
    using P = typename decltype(ptag)::type;
    const P* b = in.size() == 2 ? in[1].dptr<P>() : nullptr;
    SwitchFloatDType(out[0].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Kernel<DistDraw, xpu>::Launch(ctx.run_ctx, out[0].Size(), s, int(kDist), out[0].dptr<T>(),
                                    req[0], in[0].dptr<P>(), b, 0.0, 0.0, DrawsPerRow(attrs));
    });
  });
}

}  // namespace tessera::op
