// index_copy (MXNet's contrib.index_copy): old_tensor with the rows listed in
// index_vector replaced by new_tensor's rows, and its gradients.
#include <vector>

#include "engine/op/node.h"
#include "engine/op/op_attr_types.h"
#include "ops/tensor/index_copy_op-inl.h"

namespace tessera::op {
namespace {

bool IndexCopyShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &old = (*in)[0], &idx = (*in)[1], &neu = (*in)[2];
  if (!old.known() || !idx.known() || !neu.known()) return false;
  TS_CHECK(idx.ndim() == 1) << OpLabel(attrs) << ": index_vector has shape " << idx
                            << "; it must be a vector";
  bool rows_match = old.ndim() == neu.ndim() && neu[0] == idx[0];
  for (int d = 1; rows_match && d < old.ndim(); ++d) rows_match = old[d] == neu[d];
  TS_CHECK(rows_match) << OpLabel(attrs) << ": new_tensor has shape " << neu
                       << "; it must hold one row of old_tensor " << old << " per index of " << idx;
  AssignShape(attrs, out, 0, old, "output");
  return true;
}

// The rows the indices name, each checked against old's rows.
// The checked indices and each row's source live in temp space.
std::vector<ResourceRequest> IndexCopyTemp(const NodeAttrs&) {
  return {ResourceRequest::kTempSpace};
}

}  // namespace

TS_REGISTER_OP(_contrib_index_copy)
    .describe(R"(A copy of old_tensor whose rows index_vector[i] are new_tensor's rows
i (MXNet's contrib.index_copy). Indices are 0-based rows of old_tensor; a
repeated index takes the last of its rows (also when the output is added
to). Gradients: old_tensor gets the output gradient with the replaced rows
zero, new_tensor the replaced rows of the output gradient, index_vector
none.

Example: index_copy(zeros(5, 3), [0, 4, 2], [[1, 2, 3], [4, 5, 6], [7, 8, 9]])
= [[1, 2, 3], [0, 0, 0], [7, 8, 9], [0, 0, 0], [4, 5, 6]].)")
    .set_num_inputs(3)
    .add_alias("index_copy")
    .add_argument("old_tensor", "NDArray", "The array copied, (N, ...).")
    .add_argument("index_vector", "NDArray", "The rows replaced, (K).")
    .add_argument("new_tensor", "NDArray", "The rows put there, (K, ...).")
    .set_attr<FListInputNames>("FListInputNames",
                               FixedInputNames({"old_tensor", "index_vector", "new_tensor"}))
    .set_attr<FInferShape>("FInferShape", IndexCopyShape)
    .set_attr<FInferType>("FInferType",
                          [](const NodeAttrs& attrs, std::vector<DType>* in,
                             std::vector<DType>* out) {
                            std::vector<DType> data{(*in)[0], (*in)[2]};
                            const bool known = SameTypeAll(attrs, &data, out);
                            (*in)[0] = data[0];
                            (*in)[2] = data[1];
                            return known && (*in)[1] != DType::kUnknown;
                          })
    .set_attr<FInplaceOption>("FInplaceOption",
                              [](const NodeAttrs&) {
                                return std::vector<std::pair<int, int>>{{0, 0}};
                              })
    .set_attr<FResourceRequest>("FResourceRequest", IndexCopyTemp)
    .set_attr<FCompute>(kFComputeCPU, IndexCopyCompute<cpu>)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& og) {
      return MakeGradNode("_backward_index_copy", n, {og[0], n->inputs[1]});
    });

TS_REGISTER_OP(_backward_index_copy)
    .describe(
        "Gradient of index_copy: inputs dOut, index_vector; outputs d old_tensor, d "
        "index_vector (zero), d new_tensor.")
    .set_num_inputs(2)
    .set_num_outputs(3)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape",
                           [](const NodeAttrs& attrs, std::vector<Shape>* in,
                              std::vector<Shape>* out) {
                             const Shape &g = (*in)[0], &idx = (*in)[1];
                             if (!g.known() || !idx.known()) return false;
                             TS_CHECK(idx.ndim() == 1)
                                 << OpLabel(attrs) << ": index_vector has "
                                 << "shape " << idx << "; it must be a vector";
                             Shape neu = g;
                             neu[0] = idx[0];
                             AssignShape(attrs, out, 0, g, "gradient of old_tensor");
                             AssignShape(attrs, out, 1, idx, "gradient of index_vector");
                             AssignShape(attrs, out, 2, neu, "gradient of new_tensor");
                             return true;
                           })
    .set_attr<FInferType>("FInferType",
                          [](const NodeAttrs& attrs, std::vector<DType>* in,
                             std::vector<DType>* out) {
                            if ((*in)[0] == DType::kUnknown || (*in)[1] == DType::kUnknown)
                              return false;
                            AssignType(attrs, out, 0, (*in)[0], "gradient of old_tensor");
                            AssignType(attrs, out, 1, (*in)[1], "gradient of index_vector");
                            AssignType(attrs, out, 2, (*in)[0], "gradient of new_tensor");
                            return true;
                          })
    .set_attr<FResourceRequest>("FResourceRequest", IndexCopyTemp)
    .set_attr<FCompute>(kFComputeCPU, IndexCopyBackward<cpu>);

}  // namespace tessera::op
