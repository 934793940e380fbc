// ravel_multi_index and unravel_index (MXNet's): between tuples of positions
// in an array of shape `shape` and flat (row-major) positions. Positions
// are numbers in the input's dtype, as MXNet's; whole numbers only, so they
// have no gradient rule. Shapes and registration; the checks and kernels are
// ravel_op-inl.h, shared with the GPU (ravel_op.cu).
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/node.h"
#include "engine/op/op.h"
#include "ops/tensor/ravel_op-inl.h"

namespace tessera::op {
namespace {

// ravel: (len(shape), K) -> (K); unravel: (K) -> (len(shape), K).
template <bool kRavel>
bool RavelShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& s = (*in)[0];
  if (!s.known()) return false;
  const int64_t m = int64_t(DimsOf(attrs).size());
  if (kRavel) {
    TS_CHECK(s.ndim() == 2 && s[0] == m)
        << OpLabel(attrs) << ": data has shape " << s << "; it must be (" << m
        << ", K), one position tuple per column";
    AssignShape(attrs, out, 0, Shape{s[1]}, "output");
  } else {
    TS_CHECK(s.ndim() == 1) << OpLabel(attrs) << ": data has shape " << s
                            << "; it must be a vector of flat positions";
    AssignShape(attrs, out, 0, Shape{m, s[0]}, "output");
  }
  return true;
}

// The GPU's kernels read the shape from temp space.
std::vector<ResourceRequest> ShapeSpace(const NodeAttrs&) {
  return {ResourceRequest::kTempSpace};
}

}  // namespace

TS_REGISTER_OP(_ravel_multi_index)
    .describe(R"(Flat (row-major) positions of position tuples in an array of shape
`shape` (MXNet's ravel_multi_index): data (len(shape), K) holds one tuple per
column; the result is (K). Positions outside the shape are an error.

Example: ravel_multi_index([[3, 6, 6], [4, 5, 1]], shape=(7, 6)) = [22, 41, 37].)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<RavelParam>)
    .add_alias("ravel_multi_index")
    .add_argument("data", "NDArray", "Position tuples, one per column, (len(shape), K).")
    .add_arguments(RavelParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data"}))
    .set_attr<FInferShape>("FInferShape", RavelShape<true>)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
    .set_attr<FResourceRequest>("FResourceRequest", ShapeSpace)
    .set_attr<FCompute>(kFComputeCPU, RavelCompute<true, cpu>);

TS_REGISTER_OP(_unravel_index)
    .describe(R"(Position tuples of flat (row-major) positions in an array of shape
`shape` (MXNet's unravel_index): data (K) gives (len(shape), K), one tuple
per column. With shape[0] = -1 the first position is what remains.

Example: unravel_index([22, 41, 37], shape=(7, 6)) = [[3, 6, 6], [4, 5, 1]].)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<RavelParam>)
    .add_alias("unravel_index")
    .add_argument("data", "NDArray", "Flat positions, (K).")
    .add_arguments(RavelParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", FixedInputNames({"data"}))
    .set_attr<FInferShape>("FInferShape", RavelShape<false>)
    .set_attr<FInferType>("FInferType", ElemwiseType<1, 1>)
    .set_attr<FResourceRequest>("FResourceRequest", ShapeSpace)
    .set_attr<FCompute>(kFComputeCPU, RavelCompute<false, cpu>);

}  // namespace tessera::op
