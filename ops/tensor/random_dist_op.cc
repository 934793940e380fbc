// MXNet's other samplers on the CPU: shapes, types, docs and registration;
// the parameters, checks and element kernels are random_dist_op-inl.h, which
// the GPU registration (random_dist_op.cu) shares. _sample_multinomial is
// multinomial_op.cc.
#include <string>
#include <vector>

#include "ops/tensor/random_dist_op-inl.h"

namespace tessera::op {
namespace {

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
  FCompute compute = RandomDistCompute<kDist, cpu>;
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
// _sample_*

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

template <int kDist>
Op& DefineSample(Op& op, const char* alias, const char* doc) {
  const DistSpec& s = kDistSpecs[kDist];
  const bool two = HasB(DistKind(kDist));
  op.add_argument(s.a, "NDArray", s.a_doc);
  if (two) op.add_argument(s.b, "NDArray", s.b_doc);
  op.add_arguments(DocumentedFields<SampleParam>({{"dtype", "dtype or None"}}));
  std::vector<std::string> names{s.a};
  if (two) names.push_back(s.b);
  FCompute compute = SampleCompute<kDist, cpu>;
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
