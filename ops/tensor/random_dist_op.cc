// MXNet's other samplers: _random_exponential, _random_gamma,
// _random_poisson, _random_negative_binomial,
// _random_generalized_negative_binomial (scalar parameters), the _sample_*
// family (parameters given per row as arrays: the output is the parameters'
// shape followed by `shape`); _sample_multinomial is multinomial_op.cc. Every element draws
// from its own sub-sequence of the op's stream (random_samplers.h): results
// repeat with mx.random.seed whatever the thread count.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "ops/tensor/random_op-inl.h"
#include "ops/tensor/random_samplers.h"

namespace tessera::op {
namespace {

// ---------------------------------------------------------------------------
// The distributions

using DrawFn = double (*)(ElementDraws&, double, double);
using InvalidFn = const char* (*)(double, double);  // why (a, b) is not allowed, or null

struct DistSpec {
  const char* a;
  const char* b;  // "" for one-parameter distributions
  double default_a, default_b;
  const char* a_doc;
  const char* b_doc;
  DrawFn draw;
  InvalidFn invalid;
};

enum DistKind {
  kUniformDist,
  kNormalDist,
  kExponential,
  kGamma,
  kPoisson,
  kNegBinomial,
  kGenNegBinomial
};

// Sample-op input names (and _random_* parameter names), defaults, checks.
constexpr DistSpec kSpecs[] = {
    {"low", "high", 0, 1, "Lower bound.", "Upper bound.",
     [](ElementDraws& d, double a, double b) { return a + (b - a) * d.Uniform(); },
     [](double a, double b) -> const char* { return a <= b ? nullptr : "low exceeds high"; }},
    {"mu", "sigma", 0, 1, "Mean.", "Standard deviation.",
     [](ElementDraws& d, double a, double b) { return a + b * d.Normal(); },
     [](double, double b) -> const char* { return b >= 0 ? nullptr : "sigma is negative"; }},
    {"lam", "", 1, 0, "Rate (lambda) of the distribution.", "",
     [](ElementDraws& d, double a, double) { return SampleExponential(d, a); },
     [](double a, double) -> const char* { return a > 0 ? nullptr : "lam must be positive"; }},
    {"alpha", "beta", 1, 1, "Shape (alpha).", "Scale (beta).",
     [](ElementDraws& d, double a, double b) { return SampleGamma(d, a, b); },
     [](double a, double b) -> const char* {
       return a > 0 && b > 0 ? nullptr : "alpha and beta must be positive";
     }},
    {"lam", "", 1, 0, "Mean (lambda) of the distribution.", "",
     [](ElementDraws& d, double a, double) { return SamplePoisson(d, a); },
     [](double a, double) -> const char* { return a >= 0 ? nullptr : "lam is negative"; }},
    {"k", "p", 1, 1, "Number of successes to wait for.", "Success probability of a trial.",
     [](ElementDraws& d, double a, double b) { return SampleNegativeBinomial(d, a, b); },
     [](double a, double b) -> const char* {
       return a > 0 && b > 0 && b <= 1 ? nullptr : "k must be positive and p in (0, 1]";
     }},
    {"mu", "alpha", 1, 1, "Mean.", "Dispersion (variance mu + alpha mu^2).",
     [](ElementDraws& d, double a, double b) { return SampleGeneralizedNegativeBinomial(d, a, b); },
     [](double a, double b) -> const char* {
       return a >= 0 && b >= 0 ? nullptr : "mu and alpha must not be negative";
     }},
};

bool HasB(DistKind k) {
  return kSpecs[k].b[0] != '\0';
}

// Why (a, b) cannot parameterise distribution k, or null: the spec's rule,
// after both being finite (an infinite rate has no draws, and a rejection
// sampler on one would never stop).
const char* Invalid(DistKind k, double a, double b) {
  if (!std::isfinite(a) || !std::isfinite(b)) return "parameters must be finite";
  return kSpecs[k].invalid(a, b);
}

// ---------------------------------------------------------------------------
// _random_*: scalar parameters.

template <int kDist>
struct RandomDistParam : Params<RandomDistParam<kDist>> {
  double a = kSpecs[kDist].default_a, b = kSpecs[kDist].default_b;
  Shape shape;
  std::string ctx;
  std::optional<DType> dtype;
  static void Declare(ParamDecl<RandomDistParam>& d) {
    const DistSpec& s = kSpecs[kDist];
    d.field(s.a, &RandomDistParam::a).set_default(s.default_a).describe(s.a_doc);
    if (HasB(DistKind(kDist)))
      d.field(s.b, &RandomDistParam::b).set_default(s.default_b).describe(s.b_doc);
    DeclareRandomOutputFields(d, "float32");
  }
  void Check(const std::string& op) const {
    if (const char* why = Invalid(DistKind(kDist), a, b))
      TS_THROW << op << ": " << why << " (" << kSpecs[kDist].a << " = " << a
               << (HasB(DistKind(kDist))
                       ? std::string(", ") + kSpecs[kDist].b + " = " + std::to_string(b)
                       : std::string())
               << ")";
  }
};

// out[i] = draw(element i; a(i), b(i)) for every element, in double, rounded
// to T; `param_of(i)` gives element i's parameters.
template <typename T, typename ParamOf>
void DrawAll(const OpContext& ctx, DrawFn draw, T* out, int64_t n, OpReqType req,
             ParamOf param_of) {
  const resource::RandomStream s = ctx.requested.at(0).get_random();
  [[maybe_unused]] const int threads = CpuThreads(ctx.run_ctx, n * 16);
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#endif
  for (int64_t i = 0; i < n; ++i) {
    ElementDraws d(s, uint64_t(i));
    const auto [a, b] = param_of(i);
    const double v = draw(d, a, b);
    out[i] = req == kAddTo ? T(double(out[i]) + v) : T(v);
  }
}

template <int kDist>
void RandomDistCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>&,
                       const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<RandomDistParam<kDist>>(attrs);
  SwitchFloatDType(out[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    DrawAll(ctx, kSpecs[kDist].draw, out[0].dptr<T>(), out[0].Size(), req[0],
            [&](int64_t) { return std::pair<double, double>(p.a, p.b); });
  });
}

std::vector<ResourceRequest> RandomResource(const NodeAttrs&) {
  return {ResourceRequest::kRandom};
}

template <int kDist>
Op& DefineRandomDist(Op& op, const char* alias, const char* doc) {
  using P = RandomDistParam<kDist>;
  op.add_arguments(DocumentedFields<P>({{"dtype", "dtype or None"}}));
  op.set_attr_parser(CheckedParamParser<P>);
  FInferShape shape = InitShape<P>;
  FInferType type = FloatRandomType<P>;
  FCompute compute = RandomDistCompute<kDist>;
  return op.describe(doc)
      .add_alias(alias)
      .set_num_inputs(0)
      .set_attr<FInferShape>("FInferShape", shape)
      .set_attr<FInferType>("FInferType", type)
      .set_attr<FResourceRequest>("FResourceRequest", RandomResource)
      .set_attr<FCompute>(kFComputeCPU, compute);
}

[[maybe_unused]] const Op& kRandomExponential = DefineRandomDist<kExponential>(
    Op::Register("_random_exponential"), "random_exponential",
    R"(Draws samples from an exponential distribution with rate lam (mean
1 / lam). Values depend only on the seed (mx.random.seed) and the order of
random calls.)");
[[maybe_unused]] const Op& kRandomGamma = DefineRandomDist<kGamma>(
    Op::Register("_random_gamma"), "random_gamma",
    R"(Draws samples from a gamma distribution with shape alpha and scale beta
(mean alpha beta; Marsaglia and Tsang's method).)");
[[maybe_unused]] const Op& kRandomPoisson = DefineRandomDist<kPoisson>(
    Op::Register("_random_poisson"), "random_poisson",
    R"(Draws samples from a Poisson distribution with mean lam, as floats.)");
[[maybe_unused]] const Op& kRandomNegBinomial = DefineRandomDist<kNegBinomial>(
    Op::Register("_random_negative_binomial"), "random_negative_binomial",
    R"(Draws samples from a negative binomial distribution: the failures before
the k-th success of trials that succeed with probability p (mean
k (1 - p) / p), as floats.)");
[[maybe_unused]] const Op& kRandomGenNegBinomial = DefineRandomDist<kGenNegBinomial>(
    Op::Register("_random_generalized_negative_binomial"), "random_generalized_negative_binomial",
    R"(Draws samples from a generalized negative binomial distribution with mean
mu and dispersion alpha (variance mu + alpha mu^2; alpha = 0 is Poisson), as
floats.)");

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

int64_t DrawsPerRow(const NodeAttrs& attrs) {
  const Shape& s = ParamsOf<SampleParam>(attrs).shape;
  return s.ndim() == 0 ? 1 : s.Size();
}

bool SampleShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (in->size() == 2) {
    if (!(*in)[0].known()) AssignShape(attrs, in, 0, (*in)[1], "first parameter");
    AssignShape(attrs, in, 1, (*in)[0], "second parameter");
  }
  const Shape& p = (*in)[0];
  if (!p.known()) return false;
  const Shape& s = ParamsOf<SampleParam>(attrs).shape;
  std::vector<int64_t> dims(p.begin(), p.end());
  dims.insert(dims.end(), s.begin(), s.end());
  AssignShape(attrs, out, 0, Shape(dims), "output");
  return true;
}

bool SampleType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  std::vector<DType> none;
  SameTypeAll(attrs, in, &none);
  const auto& p = ParamsOf<SampleParam>(attrs);
  const DType t = p.dtype ? *p.dtype : (*in)[0];
  if (t == DType::kUnknown) return false;
  TS_CHECK(IsFloatingPoint(t)) << OpLabel(attrs) << ": dtype " << DTypeName(t)
                               << " is not supported (a floating-point type)";
  AssignType(attrs, out, 0, t, "output");
  return (*in)[0] != DType::kUnknown;
}

// Every parameter row checked before any draw (errors cannot leave the
// threads that draw).
template <typename P>
std::vector<std::pair<double, double>> ParameterRows(const NodeAttrs& attrs, DistKind kind,
                                                     const std::vector<TBlob>& in) {
  std::vector<std::pair<double, double>> rows(size_t(in[0].Size()));
  const P* a = in[0].dptr<P>();
  const P* b = in.size() == 2 ? in[1].dptr<P>() : nullptr;
  for (size_t r = 0; r < rows.size(); ++r) {
    rows[r] = {double(a[r]), b ? double(b[r]) : 0.0};
    if (const char* why = Invalid(kind, rows[r].first, rows[r].second))
      TS_THROW << OpLabel(attrs) << ": " << why << " in parameter row " << r << " ("
               << kSpecs[kind].a << " = " << rows[r].first
               << (b ? std::string(", ") + kSpecs[kind].b + " = " + std::to_string(rows[r].second)
                     : std::string())
               << ")";
  }
  return rows;
}

template <int kDist>
void SampleCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const int64_t per_row = DrawsPerRow(attrs);
  SwitchFloatDType(in[0].dtype(), [&](auto ptag) {
    using P = typename decltype(ptag)::type;
    const auto rows = ParameterRows<P>(attrs, DistKind(kDist), in);
    SwitchFloatDType(out[0].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      DrawAll(ctx, kSpecs[kDist].draw, out[0].dptr<T>(), out[0].Size(), req[0],
              [&](int64_t i) { return rows[size_t(i / per_row)]; });
    });
  });
}

template <int kDist>
Op& DefineSample(Op& op, const char* alias, const char* doc) {
  const DistSpec& s = kSpecs[kDist];
  const bool two = HasB(DistKind(kDist));
  op.add_argument(s.a, "NDArray", s.a_doc);
  if (two) op.add_argument(s.b, "NDArray", s.b_doc);
  op.add_arguments(DocumentedFields<SampleParam>({{"dtype", "dtype or None"}}));
  std::vector<std::string> names{s.a};
  if (two) names.push_back(s.b);
  FCompute compute = SampleCompute<kDist>;
  return op.describe(doc)
      .add_alias(alias)
      .set_num_inputs(two ? 2 : 1)
      .set_attr_parser(ParamParser<SampleParam>)
      .set_attr<FListInputNames>("FListInputNames", FixedInputNames(names))
      .set_attr<FInferShape>("FInferShape", SampleShape)
      .set_attr<FInferType>("FInferType", SampleType)
      .set_attr<FResourceRequest>("FResourceRequest", RandomResource)
      .set_attr<FCompute>(kFComputeCPU, compute);
}

constexpr const char* kSampleDoc = R"(

The parameters are arrays of one shape, one distribution per element; the
output is their shape followed by `shape`, the draws of element p at
out[p, ...].)";

std::string Doc(const char* head) {
  return std::string(head) + kSampleDoc;
}

[[maybe_unused]] const Op& kSampleUniform = DefineSample<kUniformDist>(
    Op::Register("_sample_uniform"), "sample_uniform",
    Doc("Draws samples uniformly distributed on [low, high), per parameter element.").c_str());
[[maybe_unused]] const Op& kSampleNormal = DefineSample<kNormalDist>(
    Op::Register("_sample_normal"), "sample_normal",
    Doc("Draws normal samples with mean mu and standard deviation sigma, per parameter "
        "element.")
        .c_str());
[[maybe_unused]] const Op& kSampleExponential = DefineSample<kExponential>(
    Op::Register("_sample_exponential"), "sample_exponential",
    Doc("Draws exponential samples with rate lam, per parameter element.").c_str());
[[maybe_unused]] const Op& kSampleGamma = DefineSample<kGamma>(
    Op::Register("_sample_gamma"), "sample_gamma",
    Doc("Draws gamma samples with shape alpha and scale beta, per parameter element.").c_str());
[[maybe_unused]] const Op& kSamplePoisson = DefineSample<kPoisson>(
    Op::Register("_sample_poisson"), "sample_poisson",
    Doc("Draws Poisson samples with mean lam, per parameter element.").c_str());
[[maybe_unused]] const Op& kSampleNegBinomial = DefineSample<kNegBinomial>(
    Op::Register("_sample_negative_binomial"), "sample_negative_binomial",
    Doc("Draws negative binomial samples (failures before the k-th success, success "
        "probability p), per parameter element.")
        .c_str());
[[maybe_unused]] const Op& kSampleGenNegBinomial = DefineSample<kGenNegBinomial>(
    Op::Register("_sample_generalized_negative_binomial"), "sample_generalized_negative_binomial",
    Doc("Draws generalized negative binomial samples with mean mu and dispersion alpha, per "
        "parameter element.")
        .c_str());

}  // namespace

}  // namespace tessera::op
