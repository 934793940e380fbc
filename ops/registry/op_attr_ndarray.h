// Attributes of ops whose compute takes NDArrays rather than raw blobs: it
// can push further engine ops on (aliases of) its arrays, as custom ops
// written in Lua do. Kept apart from op_attr_types.h so kernels need not see
// NDArray.
#pragma once

#include <vector>

#include "engine/ndarray/ndarray.h"
#include "ops/registry/op_attr_types.h"

namespace tessera::op {

// `in` holds every input (auxiliary states included, in input order); `out`
// the outputs. Runs inside the op's engine push, which holds their variables:
// work pushed on the arrays themselves would wait for the op, so push on
// NDArray::Alias() views and settle them before the op ends.
using FStatefulComputeEx =
    std::function<void(const OpStatePtr&, const OpContext&, const std::vector<NDArray>& in,
                       const std::vector<OpReqType>& req, const std::vector<NDArray>& out)>;

inline constexpr const char* kFStatefulComputeExCPU = "FStatefulComputeEx<cpu>";
inline constexpr const char* kFStatefulComputeExGPU = "FStatefulComputeEx<gpu>";

}  // namespace tessera::op
