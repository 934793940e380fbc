// The reference's class-style operator interface: an Operator does the
// computation (Forward, Backward); an OperatorProperty describes the op
// (parameters, argument/output/auxiliary names, shape and type inference,
// backward dependencies, in-place options, resources) and creates Operators.
//
//   TS_REGISTER_OP_PROPERTY(SwapAxis, SwapAxisProp)
//       .add_alias("swapaxes")
//       .describe("...")
//       .add_argument("data", "NDArray", "Input array.")
//       .add_arguments(SwapAxisParam::Fields());
//
// registers an adapter into the one registry, so such ops are called, put in
// symbols and differentiated like every other op:
//   - `Name`: inputs = ListArguments() then ListAuxiliaryStates() (the aux
//     states are inputs the op writes: FMutateInputs), outputs = ListOutputs();
//     FListInputNames, FListOutputNames, FNumVisibleOutputs; FInferShape and
//     FInferType through InferShape/InferType; FResourceRequest through
//     ForwardResource; FInplaceOption through ForwardInplaceOption; a
//     stateful compute: FCreateOpState makes the Operator (CreateOperatorEx),
//     FStatefulCompute<cpu> (and <gpu> in CUDA builds) calls Forward.
//   - `_backward_Name`: inputs = exactly the arrays DeclareBackwardDependency
//     lists, in its order, then the aux states; outputs = one gradient per
//     argument. Its stateful compute calls Backward with the unlisted arrays
//     left empty. FGradient builds this node; aux states get zero gradients.
//
// State: the backward op makes its own Operator from the same parameters
// (and the forward shapes, recovered through InferShape from what it gets),
// so an Operator must not keep anything from Forward that Backward needs.
// The imperative path creates a fresh Operator per call; graph executors may
// create one per node and reuse it.
//
// Resources: FResourceRequest only sees the parameters, so ForwardResource
// and BackwardResource are called with empty shapes (as in MXNet's adapter).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/op/op_attr_types.h"

namespace tessera::op {

class Operator {
 public:
  virtual ~Operator() = default;
  // Writes out_data from in_data according to req; may update aux_states.
  virtual void Forward(const OpContext& ctx, const std::vector<TBlob>& in_data,
                       const std::vector<OpReqType>& req, const std::vector<TBlob>& out_data,
                       const std::vector<TBlob>& aux_states) = 0;
  // Writes in_grad (one per argument) according to req. Arrays the property's
  // DeclareBackwardDependency does not list are empty TBlobs. The default
  // raises an error: the op has no gradient.
  virtual void Backward(const OpContext& ctx, const std::vector<TBlob>& out_grad,
                        const std::vector<TBlob>& in_data, const std::vector<TBlob>& out_data,
                        const std::vector<OpReqType>& req, const std::vector<TBlob>& in_grad,
                        const std::vector<TBlob>& aux_states);
};

class OperatorProperty {
 public:
  virtual ~OperatorProperty() = default;

  // Sets the parameters from key/value strings; errors name the op and key.
  virtual void Init(const std::vector<std::pair<std::string, std::string>>& kwargs) = 0;
  // The parameters as key/value strings (Init's inverse).
  virtual std::map<std::string, std::string> GetParams() const = 0;
  virtual std::vector<std::string> ListArguments() const { return {"data"}; }
  virtual std::vector<std::string> ListOutputs() const { return {"output"}; }
  virtual std::vector<std::string> ListAuxiliaryStates() const { return {}; }
  virtual int NumOutputs() const { return static_cast<int>(ListOutputs().size()); }
  // Outputs the user sees; the rest are internal (kept for the backward).
  virtual int NumVisibleOutputs() const { return NumOutputs(); }

  // Fills unknown shapes (ndim 0, or 0 dimensions) of arguments, outputs and
  // aux states from the known ones; false when something stays unknown; an
  // error for inconsistent shapes. The vectors come sized (arguments, outputs,
  // aux states); an implementation may also clear and refill them.
  virtual bool InferShape(std::vector<Shape>* in_shape, std::vector<Shape>* out_shape,
                          std::vector<Shape>* aux_shape) const = 0;
  // The same for dtypes. Default: every array has the dtype of the first
  // known one.
  virtual bool InferType(std::vector<DType>* in_type, std::vector<DType>* out_type,
                         std::vector<DType>* aux_type) const;

  // A copy with the same parameters.
  virtual OperatorProperty* Copy() const = 0;
  // The Operator that computes on ctx; null or an error when it cannot.
  virtual Operator* CreateOperator(Context ctx) const = 0;
  // The same, knowing the argument shapes and dtypes. Default: CreateOperator.
  virtual Operator* CreateOperatorEx(Context ctx, std::vector<Shape>* in_shape,
                                     std::vector<DType>* in_type) const;
  // The registered name.
  virtual std::string TypeString() const = 0;

  virtual std::vector<ResourceRequest> ForwardResource(const std::vector<Shape>& in_shape) const;
  virtual std::vector<ResourceRequest> BackwardResource(const std::vector<Shape>& in_shape) const;

  // The arrays Backward reads, as the ids given for them. Default: all of
  // out_grad, in_data and out_data. Listing fewer lets the graph free the rest.
  virtual std::vector<int> DeclareBackwardDependency(const std::vector<int>& out_grad,
                                                     const std::vector<int>& in_data,
                                                     const std::vector<int>& out_data) const;
  // (in_data id, out_data handle) pairs that may share memory. Default: none.
  virtual std::vector<std::pair<int, void*>> ForwardInplaceOption(
      const std::vector<int>& in_data, const std::vector<void*>& out_data) const;
  // (out_grad/in_data/out_data id, in_grad handle) pairs. Default: none.
  virtual std::vector<std::pair<int, void*>> BackwardInplaceOption(
      const std::vector<int>& out_grad, const std::vector<int>& in_data,
      const std::vector<int>& out_data, const std::vector<void*>& in_grad) const;
};

// Registers `name` and `_backward_name` as adapters over a property made by
// `factory`; returns the forward op for .describe/.add_argument/.add_alias.
Op& RegisterOpProperty(const std::string& name,
                       std::function<std::unique_ptr<OperatorProperty>()> factory);

template <typename PropertyClass>
Op& RegisterOpPropertyClass(const std::string& name) {
  return RegisterOpProperty(name, [] { return std::make_unique<PropertyClass>(); });
}

}  // namespace tessera::op

// TS_REGISTER_OP_PROPERTY(Name, PropertyClass) .describe(...) ...;  at namespace scope.
#define TS_REGISTER_OP_PROPERTY(Name, PropertyClass)                                      \
  [[maybe_unused]] static ::tessera::op::Op& TS_OP_CONCAT(ts_op_property_, __COUNTER__) = \
      ::tessera::op::RegisterOpPropertyClass<PropertyClass>(#Name)
