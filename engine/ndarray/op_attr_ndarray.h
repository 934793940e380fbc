// Attributes of ops whose compute takes NDArrays rather than raw blobs: it
// can push further engine ops on (aliases of) its arrays, as custom ops
// written in Lua do. Kept apart from op_attr_types.h so kernels need not see
// NDArray.
#pragma once

#include <vector>

#include "engine/ndarray/ndarray.h"
#include "engine/op/op.h"
#include "engine/op/op_attr_types.h"

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

// The compute an op has for a device, as imperative calls and executors both
// choose it: an NDArray-level compute hides the others; none found means the
// op has no kernel there.
struct DeviceKernel {
  const FCompute* fcompute = nullptr;
  const FStatefulCompute* fstate = nullptr;
  const FStatefulComputeEx* fstate_ex = nullptr;
  bool is_async = false;  // an NDArray-level compute declared FExecType kAsync
  bool found() const { return fcompute || fstate || fstate_ex; }
};

inline DeviceKernel FindDeviceKernel(const NodeAttrs& attrs, bool on_gpu) {
  static const auto& fcompute_cpu = Op::GetAttr<FCompute>(kFComputeCPU);
  static const auto& fcompute_gpu = Op::GetAttr<FCompute>(kFComputeGPU);
  static const auto& fstate_cpu = Op::GetAttr<FStatefulCompute>(kFStatefulComputeCPU);
  static const auto& fstate_gpu = Op::GetAttr<FStatefulCompute>(kFStatefulComputeGPU);
  static const auto& fstate_ex_cpu = Op::GetAttr<FStatefulComputeEx>(kFStatefulComputeExCPU);
  static const auto& fstate_ex_gpu = Op::GetAttr<FStatefulComputeEx>(kFStatefulComputeExGPU);
  static const auto& fexec_type = Op::GetAttr<FExecType>("FExecType");
  const Op* op = attrs.op;
  DeviceKernel k;
  k.fstate_ex = (on_gpu ? fstate_ex_gpu : fstate_ex_cpu).find(op);
  if (k.fstate_ex) {
    const FExecType* et = fexec_type.find(op);
    k.is_async = et && (*et)(attrs) == ExecType::kAsync;
    return k;
  }
  k.fcompute = (on_gpu ? fcompute_gpu : fcompute_cpu).find(op);
  k.fstate = (on_gpu ? fstate_gpu : fstate_cpu).find(op);
  return k;
}

}  // namespace tessera::op
