// SimpleOp: the reference's unified API for unary and binary operators. An op
// is described by its functions alone: a forward function (unary or binary),
// optionally a shape function, and optionally a gradient function whose
// signature says what the backward needs besides the output gradient (nothing,
// the output value, or the inputs). Registration turns that into ordinary
// registry ops, the same objects every other op is:
//
//   TS_REGISTER_SIMPLE_OP(smooth_l1, cpu)
//       .set_function(cpu::kDevice, SmoothL1Forward<cpu>, kNoInplace)
//       .set_gradient(cpu::kDevice, SmoothL1BackwardUseIn<cpu>, kInplaceOutIn)
//       .set_enable_scalar(true)
//       .describe("...");
//
// registers `smooth_l1` (inputs "data", or "lhs" and "rhs"; a `scalar`
// parameter when scalars are enabled, any key=value when kwargs are) and
// `_backward_smooth_l1` (inputs: out_grad, then out_value or the inputs as
// the gradient type asks), with FInferShape, FInferType, FInplaceOption,
// FResourceRequest, FCompute<cpu|gpu> and FGradient. A .cu file adds the GPU
// functions with TS_REGISTER_SIMPLE_OP(smooth_l1, gpu).set_function(gpu::kDevice, ...);
// each call adds to the same entry, in any order.
//
// Mistakes in a registration (scalar and kwargs together, a unary function
// on a binary op, an in-place option of the wrong kind) raise tessera::Error
// from the setter.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/op/kernel_launch.h"
#include "engine/op/op_attr_types.h"

namespace tessera::op {

// What a SimpleOp function gets besides its data.
struct EnvArguments {
  double scalar = 0;                                        // the `scalar` parameter, if enabled
  std::vector<std::pair<std::string, std::string>> kwargs;  // every parameter, if enabled
  std::vector<Resource> resource;                           // in the order requested
};

// The arguments of gradient functions; the type says which array it is.
struct GradFunctionArgument {
  TBlob data;
};
struct OutputGrad : GradFunctionArgument {};
struct OutputValue : GradFunctionArgument {};
struct Input0 : GradFunctionArgument {};
struct Input1 : GradFunctionArgument {};

// Forward functions write *ret according to req.
using UnaryFunction = void (*)(const TBlob& src, const EnvArguments& env, TBlob* ret, OpReqType req,
                               RunContext ctx);
using BinaryFunction = void (*)(const TBlob& lhs, const TBlob& rhs, const EnvArguments& env,
                                TBlob* ret, OpReqType req, RunContext ctx);
// The output shape from known input shapes; may raise an error for bad
// inputs. Without one the output has the input's shape (binary: lhs and rhs
// must match).
using UnaryShapeFunction = Shape (*)(const Shape& src, const EnvArguments& env);
using BinaryShapeFunction = Shape (*)(const Shape& lhs, const Shape& rhs, const EnvArguments& env);

// Gradients of unary ops: from out_grad only (T0), with the output value
// (T1), with the input (T2).
using UnaryGradFunctionT0 = void (*)(const OutputGrad& out_grad, const EnvArguments& env,
                                     TBlob* in_grad, OpReqType req, RunContext ctx);
using UnaryGradFunctionT1 = void (*)(const OutputGrad& out_grad, const OutputValue& out_value,
                                     const EnvArguments& env, TBlob* in_grad, OpReqType req,
                                     RunContext ctx);
using UnaryGradFunctionT2 = void (*)(const OutputGrad& out_grad, const Input0& in_data0,
                                     const EnvArguments& env, TBlob* in_grad, OpReqType req,
                                     RunContext ctx);
// Gradients of binary ops: from out_grad only (T0), with both inputs (T1).
using BinaryGradFunctionT0 = void (*)(const OutputGrad& out_grad, const EnvArguments& env,
                                      TBlob* lhs_grad, TBlob* rhs_grad, OpReqType req_lhs_grad,
                                      OpReqType req_rhs_grad, RunContext ctx);
using BinaryGradFunctionT1 = void (*)(const OutputGrad& out_grad, const Input0& lhs,
                                      const Input1& rhs, const EnvArguments& env, TBlob* lhs_grad,
                                      TBlob* rhs_grad, OpReqType req_lhs_grad,
                                      OpReqType req_rhs_grad, RunContext ctx);

// Which arrays may share memory. Forward options: kInplaceInOut (unary: the
// input with the output), kInplaceLhsOut (binary: lhs with the output).
// Gradient options: kInplaceOutIn (unary: out_grad with in_grad),
// kInplaceOutLhs (binary: out_grad with lhs_grad). A hint: the system decides.
enum SimpleOpInplaceOption {
  kNoInplace,
  kInplaceInOut,
  kInplaceOutIn,
  kInplaceLhsOut,
  kInplaceOutLhs,
};

class SimpleOpRegEntry {
 public:
  // The entry named `name`, created on first use (with its forward op).
  static SimpleOpRegEntry& Register(const std::string& name);
  // Null when no SimpleOp has that name.
  static const SimpleOpRegEntry* Find(std::string_view name);

  // `dev`: cpu::kDevice or gpu::kDevice. `inplace`: a forward option.
  SimpleOpRegEntry& set_function(DeviceType dev, UnaryFunction fn,
                                 SimpleOpInplaceOption inplace = kNoInplace);
  SimpleOpRegEntry& set_function(DeviceType dev, BinaryFunction fn,
                                 SimpleOpInplaceOption inplace = kNoInplace);
  // `inplace`: a gradient option. Every device's gradient must be of one type.
  SimpleOpRegEntry& set_gradient(DeviceType dev, UnaryGradFunctionT0 fn,
                                 SimpleOpInplaceOption inplace = kNoInplace);
  SimpleOpRegEntry& set_gradient(DeviceType dev, UnaryGradFunctionT1 fn,
                                 SimpleOpInplaceOption inplace = kNoInplace);
  SimpleOpRegEntry& set_gradient(DeviceType dev, UnaryGradFunctionT2 fn,
                                 SimpleOpInplaceOption inplace = kNoInplace);
  SimpleOpRegEntry& set_gradient(DeviceType dev, BinaryGradFunctionT0 fn,
                                 SimpleOpInplaceOption inplace = kNoInplace);
  SimpleOpRegEntry& set_gradient(DeviceType dev, BinaryGradFunctionT1 fn,
                                 SimpleOpInplaceOption inplace = kNoInplace);
  SimpleOpRegEntry& set_shape_function(UnaryShapeFunction fn);
  SimpleOpRegEntry& set_shape_function(BinaryShapeFunction fn);
  // A required `scalar` parameter (a double), passed as EnvArguments::scalar.
  SimpleOpRegEntry& set_enable_scalar(bool enable);
  // Any key=value parameters, passed through as EnvArguments::kwargs.
  SimpleOpRegEntry& set_enable_kwargs(bool enable);
  SimpleOpRegEntry& set_resource_request(ResourceRequest req);
  SimpleOpRegEntry& set_resource_request(const std::vector<ResourceRequest>& reqs);
  SimpleOpRegEntry& describe(const std::string& text);

  const std::string& name() const { return name_; }
  bool is_binary() const { return arity_ == Arity::kBinary; }
  bool has_gradient() const { return grad_kind_ != GradKind::kNone; }

  // The EnvArguments of one call (resources: what the op was given).
  EnvArguments MakeEnv(const NodeAttrs& attrs, const std::vector<Resource>& resources = {}) const;

 private:
  enum class Arity { kUnknown, kUnary, kBinary };
  enum class GradKind { kNone, kUnaryT0, kUnaryT1, kUnaryT2, kBinaryT0, kBinaryT1 };
  struct GradFunctions {
    UnaryGradFunctionT0 unary_t0 = nullptr;
    UnaryGradFunctionT1 unary_t1 = nullptr;
    UnaryGradFunctionT2 unary_t2 = nullptr;
    BinaryGradFunctionT0 binary_t0 = nullptr;
    BinaryGradFunctionT1 binary_t1 = nullptr;
  };

  explicit SimpleOpRegEntry(std::string name);
  void SetArity(Arity arity, const char* what);
  void SetForwardInplace(SimpleOpInplaceOption inplace);
  // Registers FCompute<dev> on the forward op.
  void AddForwardCompute(DeviceType dev);
  // Checks the gradient type, creates the backward op on first use, and
  // registers FCompute<dev> on it.
  void AddGradient(DeviceType dev, GradKind kind, SimpleOpInplaceOption inplace);
  void RegisterBackwardOp();
  uint32_t NumBackwardInputs() const;

  void Parse(NodeAttrs* attrs) const;
  bool ForwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) const;
  bool BackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) const;
  void RunForward(int dev, const NodeAttrs& attrs, const OpContext& ctx,
                  const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                  const std::vector<TBlob>& out) const;
  void RunBackward(int dev, const NodeAttrs& attrs, const OpContext& ctx,
                   const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                   const std::vector<TBlob>& out) const;
  std::vector<NodeEntry> MakeGradient(const NodePtr& n, const std::vector<NodeEntry>& ograds) const;

  std::string name_;
  Op* forward_;
  Op* backward_ = nullptr;
  Arity arity_ = Arity::kUnknown;
  bool enable_scalar_ = false, enable_kwargs_ = false;
  bool added_arguments_ = false, added_scalar_doc_ = false;
  SimpleOpInplaceOption forward_inplace_ = kNoInplace, grad_inplace_ = kNoInplace;
  std::vector<ResourceRequest> resources_;
  UnaryShapeFunction unary_shape_ = nullptr;
  BinaryShapeFunction binary_shape_ = nullptr;
  // Indexed by device: 0 cpu, 1 gpu.
  UnaryFunction unary_[2] = {nullptr, nullptr};
  BinaryFunction binary_[2] = {nullptr, nullptr};
  GradKind grad_kind_ = GradKind::kNone;
  GradFunctions grad_[2];
};

}  // namespace tessera::op

// TS_REGISTER_SIMPLE_OP(name, xpu) .set_function(...) ...;  at namespace scope.
#define TS_REGISTER_SIMPLE_OP(name, xpu)                                 \
  [[maybe_unused]] static ::tessera::op::SimpleOpRegEntry& TS_OP_CONCAT( \
      ts_simple_op_##name##_##xpu##_, __COUNTER__) =                     \
      ::tessera::op::SimpleOpRegEntry::Register(#name)
