#include "ops/tensor/random_op-inl.h"

namespace tessera::op {

namespace {

std::vector<ResourceRequest> RandomResource(const NodeAttrs&) {
  return {ResourceRequest::kRandom};
}

void ShuffleComputeCpu(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const std::vector<int64_t> perm =
      ShufflePermutation(ctx.requested.at(0).get_random(), in[0].shape()[0]);
  ShuffleGather<cpu>(ctx, in[0], req[0], out[0], perm.data());
}

}  // namespace

TS_REGISTER_OP(_random_uniform)
    .add_alias("random_uniform")
    .add_alias("uniform")
    .describe(R"(Draws samples uniformly distributed on [low, high).

Values depend only on the seed (mx.random.seed) and the order of random calls,
not on the device or the number of threads.)")
    .set_num_inputs(0)
    .set_attr_parser(CheckedParamParser<UniformParam>)
    .add_arguments(DocumentedFields<UniformParam>({{"dtype", "dtype or None"}}))
    .set_attr<FInferShape>("FInferShape", InitShape<UniformParam>)
    .set_attr<FInferType>("FInferType", FloatRandomType<UniformParam>)
    .set_attr<FResourceRequest>("FResourceRequest", RandomResource)
    .set_attr<FCompute>(kFComputeCPU, UniformCompute<cpu>);

TS_REGISTER_OP(_random_normal)
    .add_alias("random_normal")
    .add_alias("normal")
    .describe(R"(Draws samples from a normal (Gaussian) distribution with mean `loc` and
standard deviation `scale`.

Values depend only on the seed (mx.random.seed) and the order of random calls.)")
    .set_num_inputs(0)
    .set_attr_parser(CheckedParamParser<NormalParam>)
    .add_arguments(DocumentedFields<NormalParam>({{"dtype", "dtype or None"}}))
    .set_attr<FInferShape>("FInferShape", InitShape<NormalParam>)
    .set_attr<FInferType>("FInferType", FloatRandomType<NormalParam>)
    .set_attr<FResourceRequest>("FResourceRequest", RandomResource)
    .set_attr<FCompute>(kFComputeCPU, NormalCompute<cpu>);

TS_REGISTER_OP(_random_randint)
    .add_alias("random_randint")
    .add_alias("randint")
    .describe(R"(Draws integers uniformly distributed on [low, high), as int32 or int64.)")
    .set_num_inputs(0)
    .set_attr_parser(CheckedParamParser<RandIntParam>)
    .add_arguments(DocumentedFields<RandIntParam>({{"dtype", "dtype or None"}}))
    .set_attr<FInferShape>("FInferShape", InitShape<RandIntParam>)
    .set_attr<FInferType>("FInferType", RandIntType)
    .set_attr<FResourceRequest>("FResourceRequest", RandomResource)
    .set_attr<FCompute>(kFComputeCPU, RandIntCompute<cpu>);

// No gradient: the permutation is not kept, so out_grad could not be routed back.
TS_REGISTER_OP(_shuffle)
    .add_alias("shuffle")
    .describe(R"(Randomly permutes the array along its first axis: the output's rows are
the input's rows in a random order (the other axes are untouched).)")
    .set_num_inputs(1)
    .add_argument("data", "NDArray", "Array whose first axis is shuffled.")
    .set_attr<FInferShape>("FInferShape", ElemwiseShape<1, 1>)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
    .set_attr<FResourceRequest>("FResourceRequest",
                                [](const NodeAttrs&) {
                                  return std::vector<ResourceRequest>{ResourceRequest::kRandom,
                                                                      ResourceRequest::kTempSpace};
                                })
    .set_attr<FCompute>(kFComputeCPU, ShuffleComputeCpu);

}  // namespace tessera::op
