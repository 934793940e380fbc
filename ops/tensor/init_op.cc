#include "ops/tensor/init_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(_zeros)
    .add_alias("zeros")
    .describe("An array of zeros of the given shape, dtype and device.")
    .set_num_inputs(0)
    .set_attr_parser(CheckedParamParser<InitParam>)
    .add_arguments(InitParam::Fields())
    .set_attr<FInferShape>("FInferShape", InitShape<InitParam>)
    .set_attr<FInferType>("FInferType", InitType<InitParam>)
    .set_attr<FCompute>(kFComputeCPU, FillConstantCompute<cpu, 0>);

TS_REGISTER_OP(_ones)
    .add_alias("ones")
    .describe("An array of ones of the given shape, dtype and device.")
    .set_num_inputs(0)
    .set_attr_parser(CheckedParamParser<InitParam>)
    .add_arguments(InitParam::Fields())
    .set_attr<FInferShape>("FInferShape", InitShape<InitParam>)
    .set_attr<FInferType>("FInferType", InitType<InitParam>)
    .set_attr<FCompute>(kFComputeCPU, FillConstantCompute<cpu, 1>);

TS_REGISTER_OP(_full)
    .add_alias("full")
    .describe(R"(An array of the given shape, dtype and device with every element `value`.

Integer dtypes saturate (full(value=300, dtype='uint8') is 255); bool is value != 0.)")
    .set_num_inputs(0)
    .set_attr_parser(CheckedParamParser<FullParam>)
    .add_arguments(FullParam::Fields())
    .set_attr<FInferShape>("FInferShape", InitShape<FullParam>)
    .set_attr<FInferType>("FInferType", InitType<FullParam>)
    .set_attr<FCompute>(kFComputeCPU, FullCompute<cpu>);

TS_REGISTER_OP(_empty)
    .add_alias("empty")
    .describe(
        "An array of the given shape, dtype and device whose elements are not initialised "
        "(whatever the memory held).")
    .set_num_inputs(0)
    .set_attr_parser(CheckedParamParser<InitParam>)
    .add_arguments(InitParam::Fields())
    .set_attr<FInferShape>("FInferShape", InitShape<InitParam>)
    .set_attr<FInferType>("FInferType", InitType<InitParam>)
    .set_attr<FCompute>(kFComputeCPU, EmptyCompute);

TS_REGISTER_OP(_arange)
    .add_alias("arange")
    .describe(R"(Evenly spaced values in [start, stop), each repeated `repeat` times.

The length is ceil((stop - start) / step) * repeat; values are computed in double
precision and then converted to `dtype`.

Example: arange(start=2, stop=6, step=1.5) = [2, 3.5, 5];
arange(start=3) = [0, 1, 2]; arange(start=0, stop=2, repeat=2) = [0, 0, 1, 1].)")
    .set_num_inputs(0)
    .set_attr_parser(CheckedParamParser<ArangeParam>)
    .add_arguments(DocumentedFields<ArangeParam>({{"stop", "double or None"}}))
    .set_attr<FInferShape>("FInferShape", ArangeShape)
    .set_attr<FInferType>("FInferType", InitType<ArangeParam>)
    .set_attr<FCompute>(kFComputeCPU, ArangeCompute<cpu>);

TS_REGISTER_OP(_eye)
    .add_alias("eye")
    .describe(R"(An N x M matrix with ones on diagonal k and zeros elsewhere.

Example: eye(N=2, M=3, k=1) = [[0, 1, 0], [0, 0, 1]].)")
    .set_num_inputs(0)
    .set_attr_parser(CheckedParamParser<EyeParam>)
    .add_arguments(EyeParam::Fields())
    .set_attr<FInferShape>("FInferShape", EyeShape)
    .set_attr<FInferType>("FInferType", InitType<EyeParam>)
    .set_attr<FCompute>(kFComputeCPU, EyeCompute<cpu>);

TS_REGISTER_OP(_linspace)
    .add_alias("linspace")
    .describe(R"(`num` evenly spaced values from `start` to `stop`.

With endpoint=True the step is (stop - start) / (num - 1) and the last value is
stop; with endpoint=False the step is (stop - start) / num and stop is excluded.

Example: linspace(start=0, stop=1, num=5) = [0, 0.25, 0.5, 0.75, 1].)")
    .set_num_inputs(0)
    .set_attr_parser(CheckedParamParser<LinspaceParam>)
    .add_arguments(LinspaceParam::Fields())
    .set_attr<FInferShape>("FInferShape", LinspaceShape)
    .set_attr<FInferType>("FInferType", InitType<LinspaceParam>)
    .set_attr<FCompute>(kFComputeCPU, LinspaceCompute<cpu>);

}  // namespace tessera::op
