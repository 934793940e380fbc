// Custom operators: ops whose description and computation come from a front
// end at run time (the shell's Lua bridge implements them for
// mx.operator.register). One registered op, "Custom", dispatches on its
// `op_type` parameter to the property registered under that name; every
// other parameter reaches the property's constructor as text, as in MXNet.
//
// "Custom" takes the property's arguments then its auxiliary states as
// inputs and gives its outputs; shape and type inference, the operator
// object (FCreateOpState) and the gradient ("_backward_Custom") all go
// through the property, so a custom op works in NDArray calls, symbols,
// executors and autograd like a built-in one. Its compute is asynchronous
// (ExecType::kAsync): the engine worker hands the call to the front end and
// is freed; the op ends once the front end's code has returned and the work
// it pushed on the op's arrays has finished.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/ndarray/ndarray.h"
#include "engine/op/params.h"

namespace tessera::op::custom {

// Called once with the error of the front end's code, or null.
using Done = std::function<void(std::exception_ptr)>;

// One instance of a custom op (MXNet's CustomOp). The arrays are aliases of
// the op's arrays with engine variables of their own: the front end may push
// work on them and wait for them; the op ends when that work has finished.
// Auxiliary states are written in place. Calls come from engine threads.
class CustomOperator {
 public:
  virtual ~CustomOperator() = default;
  virtual void Forward(bool is_train, const std::vector<OpReqType>& req,
                       const std::vector<NDArray>& in_data, const std::vector<NDArray>& out_data,
                       const std::vector<NDArray>& aux, Done done) = 0;
  // Arrays the property does not declare as backward dependencies are empty.
  virtual void Backward(const std::vector<OpReqType>& req, const std::vector<NDArray>& out_grad,
                        const std::vector<NDArray>& in_data, const std::vector<NDArray>& out_data,
                        const std::vector<NDArray>& in_grad, const std::vector<NDArray>& aux,
                        Done done) = 0;
};

// The description of a custom op with given parameters (MXNet's
// CustomOpProp). Called on the thread that builds or runs the graph.
class CustomOpProp {
 public:
  virtual ~CustomOpProp() = default;
  virtual std::vector<std::string> ListArguments() = 0;
  virtual std::vector<std::string> ListOutputs() = 0;
  virtual std::vector<std::string> ListAuxiliaryStates() = 0;
  // Fills shapes from known ones (unknown: ndim 0). Called once the first
  // argument's shape is known; entries left unknown stay unknown.
  virtual void InferShape(std::vector<Shape>* in, std::vector<Shape>* out,
                          std::vector<Shape>* aux) = 0;
  virtual void InferType(std::vector<DType>* in, std::vector<DType>* out,
                         std::vector<DType>* aux) = 0;
  // The arrays the backward reads, as the ids given: out_grad, in_data and
  // out_data ids each in their own range.
  virtual std::vector<int> DeclareBackwardDependency(const std::vector<int>& out_grad,
                                                     const std::vector<int>& in_data,
                                                     const std::vector<int>& out_data) = 0;
  virtual std::shared_ptr<CustomOperator> CreateOperator(Context ctx,
                                                         const std::vector<Shape>& in_shapes,
                                                         const std::vector<DType>& in_types) = 0;
};

// Makes a property from the op's parameters (op_type removed).
using PropCreator = std::function<std::shared_ptr<CustomOpProp>(const ParamDict& kwargs)>;

// Registers `op_type`; returns true when it replaced an earlier registration
// (nodes made before keep the property they were made with).
bool Register(const std::string& op_type, PropCreator creator);
bool Unregister(const std::string& op_type);
std::vector<std::string> ListRegistered();

}  // namespace tessera::op::custom
