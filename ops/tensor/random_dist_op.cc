// MXNet's other samplers: _random_exponential, _random_gamma,
// _random_poisson, _random_negative_binomial,
// _random_generalized_negative_binomial (scalar parameters), the _sample_*
// family (parameters given per row as arrays: the output is the parameters'
// shape followed by `shape`), and _sample_multinomial. Every element draws
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

// ---------------------------------------------------------------------------
// _sample_multinomial: class indices drawn from rows of probabilities.

struct MultinomialParam : Params<MultinomialParam> {
  Shape shape;
  bool get_prob = false;
  DType dtype = DType::kInt32;
  static void Declare(ParamDecl<MultinomialParam>& d) {
    d.field("shape", &MultinomialParam::shape)
        .set_default(Shape())
        .describe(
            "The draws per row of probabilities; the output is data's shape without "
            "its last axis, followed by this one.");
    d.field("get_prob", &MultinomialParam::get_prob)
        .set_default(false)
        .describe(
            "Also return the log-probability of each draw (its gradient flows to "
            "data, for REINFORCE-style estimators).");
    d.field("dtype", &MultinomialParam::dtype)
        .set_default(DType::kInt32)
        .describe("The dtype of the drawn indices: int32, int64, float32 or float64.");
  }
};

uint32_t MultinomialOutputs(const NodeAttrs& attrs) {
  return ParamsOf<MultinomialParam>(attrs).get_prob ? 2 : 1;
}

bool MultinomialShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[0];
  if (!d.known()) return false;
  const Shape& s = ParamsOf<MultinomialParam>(attrs).shape;
  std::vector<int64_t> dims(d.begin(), d.end() - 1);
  dims.insert(dims.end(), s.begin(), s.end());
  if (dims.empty()) dims.push_back(1);  // one row, one draw: (1,), as MXNet
  for (size_t i = 0; i < out->size(); ++i) AssignShape(attrs, out, i, Shape(dims), "output");
  return true;
}

bool MultinomialType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const DType t = ParamsOf<MultinomialParam>(attrs).dtype;
  TS_CHECK(t == DType::kInt32 || t == DType::kInt64 || t == DType::kFloat32 || t == DType::kFloat64)
      << OpLabel(attrs) << ": dtype " << DTypeName(t)
      << " is not supported (int32, int64, float32, float64)";
  AssignType(attrs, out, 0, t, "output");
  if ((*in)[0] == DType::kUnknown) return false;
  TS_CHECK(IsFloatingPoint((*in)[0])) << OpLabel(attrs) << ": data has dtype "
                                      << DTypeName((*in)[0]) << "; probabilities are floats";
  if (out->size() == 2) AssignType(attrs, out, 1, (*in)[0], "log-probabilities");
  return true;
}

// The class of uniform u in a row of probabilities: the first whose running
// sum passes u (the last class when rounding leaves the sum short of u).
template <typename P>
int64_t ClassOf(const P* row, int64_t k, double u) {
  double acc = 0;
  for (int64_t j = 0; j < k; ++j) {
    acc += double(row[j]);
    if (u < acc) return j;
  }
  return k - 1;
}

void MultinomialCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const Shape& ds = in[0].shape();
  const int64_t k = ds[ds.ndim() - 1], n = out[0].Size(), per_row = n / (in[0].Size() / k);
  const resource::RandomStream s = ctx.requested.at(0).get_random();
  SwitchFloatDType(in[0].dtype(), [&](auto ptag) {
    using P = typename decltype(ptag)::type;
    const P* prob = in[0].dptr<P>();
    for (int64_t i = 0, m = in[0].Size(); i < m; ++i)
      TS_CHECK(double(prob[i]) >= 0)
          << OpLabel(attrs) << ": probability " << double(prob[i]) << " at row " << i / k
          << ", class " << i % k << " is negative";
    std::vector<int64_t> cls(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      ElementDraws d(s, uint64_t(i));
      cls[size_t(i)] = ClassOf(prob + (i / per_row) * k, k, d.Uniform());
    }
    SwitchDType(out[0].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* y = out[0].dptr<T>();
      if (req[0] != kNullOp)
        for (int64_t i = 0; i < n; ++i)
          y[i] = req[0] == kAddTo ? T(y[i] + T(cls[size_t(i)])) : T(cls[size_t(i)]);
    });
    if (out.size() == 2 && req[1] != kNullOp) {
      P* lp = out[1].dptr<P>();
      for (int64_t i = 0; i < n; ++i) {
        const double v = std::log(double(prob[(i / per_row) * k + cls[size_t(i)]]));
        lp[i] = req[1] == kAddTo ? P(double(lp[i]) + v) : P(v);
      }
    }
  });
}

// in: d log-probabilities, data, samples; d data[row, c] = sum over the
// row's draws of class c of dlogp / p[row, c].
void MultinomialBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const Shape& ds = in[1].shape();
  const int64_t k = ds[ds.ndim() - 1], n = in[2].Size(), per_row = n / (in[1].Size() / k);
  SwitchFloatDType(in[1].dtype(), [&](auto ptag) {
    using P = typename decltype(ptag)::type;
    const P* g = in[0].dptr<P>();
    const P* prob = in[1].dptr<P>();
    P* dx = out[0].dptr<P>();
    if (req[0] != kAddTo) std::fill(dx, dx + in[1].Size(), P(0));
    SwitchDType(in[2].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* cls = in[2].dptr<T>();
      for (int64_t i = 0; i < n; ++i) {
        const double c = double(cls[i]);
        TS_CHECK(c >= 0 && c < double(k) && c == double(int64_t(c)))
            << OpLabel(attrs) << ": sample " << i << " is " << c << ", not a class in [0, " << k
            << ")";
        const int64_t at = (i / per_row) * k + int64_t(c);
        dx[at] = P(double(dx[at]) + double(g[i]) / double(prob[at]));
      }
    });
  });
}

}  // namespace

TS_REGISTER_OP(_sample_multinomial)
    .describe(R"(Draws class indices from rows of probabilities (MXNet's
sample_multinomial): data (..., K), each row a distribution over K classes,
gives (..., shape...) indices (0-based). With get_prob, a second output holds
each draw's log-probability, through which gradients reach data.)")
    .add_alias("sample_multinomial")
    .set_num_inputs(1)
    .set_num_outputs(MultinomialOutputs)
    .set_attr_parser(ParamParser<MultinomialParam>)
    .add_argument("data", "NDArray", "Probabilities, (..., K); each row sums to 1.")
    .add_arguments(MultinomialParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data"}))
    .set_attr<FInferShape>("FInferShape", MultinomialShape)
    .set_attr<FInferType>("FInferType", MultinomialType)
    .set_attr<FResourceRequest>("FResourceRequest", RandomResource)
    .set_attr<FCompute>(kFComputeCPU, MultinomialCompute)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      if (!ParamsOf<MultinomialParam>(n->attrs).get_prob) return MakeZeroGradNodes(n);
      return MakeGradNode("_backward_sample_multinomial", n,
                          {og[1], n->inputs[0], NodeEntry{n, 0, 0}});
    });

TS_REGISTER_OP(_backward_sample_multinomial)
    .describe(
        "Gradient of sample_multinomial through its log-probabilities: inputs dlogp, "
        "data, samples; output d data.")
    .set_num_inputs(3)
    .set_num_outputs(1)
    .set_attr_parser(ParamParser<MultinomialParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& attrs, std::vector<Shape>* in,
                              std::vector<Shape>* out) {
                             std::vector<Shape> fin{(*in)[1]}, fout(1);
                             if (!MultinomialShape(attrs, &fin, &fout)) return false;
                             AssignShape(attrs, in, 0, fout[0], "output gradient");
                             AssignShape(attrs, in, 2, fout[0], "samples");
                             AssignShape(attrs, out, 0, fin[0], "gradient");
                             return true;
                           })
    .set_attr<FInferType>("FInferType",
                          [](const NodeAttrs& attrs, std::vector<DType>* in,
                             std::vector<DType>* out) {
                            if ((*in)[1] == DType::kUnknown) return false;
                            AssignType(attrs, in, 0, (*in)[1], "output gradient");
                            AssignType(attrs, out, 0, (*in)[1], "gradient");
                            return (*in)[2] != DType::kUnknown;
                          })
    .set_attr<FCompute>(kFComputeCPU, MultinomialBackward);

}  // namespace tessera::op
