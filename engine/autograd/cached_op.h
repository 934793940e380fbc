// CachedOp: a symbol called like one op, bound once per input signature
// (MXNet's CachedOp; what a hybridized Gluon block runs).
//
//   auto op = std::make_shared<CachedOp>(sym, {"data"});
//   std::vector<NDArray> out = op->Forward(inputs);  // inputs in input_names() order
//
// Inputs are the symbol's variables in ListInputs order. Data inputs (the
// names given) are copied into arrays the executor owns; the others
// (parameters, auxiliary states) are bound as they are, so a later call
// with the same arrays costs no copy, and a different array rebinds.
// Executors are cached by context, input shapes and dtypes, the identity of
// the bound arrays and which inputs want a gradient.
//
// The call is pushed from the calling thread, not as one engine op that
// pushes more: its ops order against the caller's other work by their
// variables, as if typed one by one. Under mx.autograd.record it is recorded
// as one node (op _CachedOp) whose gradient, _backward_CachedOp, runs the
// executor's backward from the thread that runs autograd's backward. The
// executor that ran a recorded forward is reserved until that backward (or
// until the recorded node goes away): a second forward before it binds
// another executor, so their saved activations never mix. A parameter's
// gradient is written straight into its own buffer (attach_grad 'write')
// unless another pending call writes that buffer too; autograd then skips
// its copy.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/graph/symbol.h"
#include "engine/ndarray/ndarray.h"

namespace tessera::autograd {

class CachedOp : public std::enable_shared_from_this<CachedOp> {
 public:
  // `data_names`: the inputs copied in at each call; each must be a variable
  // of `sym` that is an argument (not an auxiliary state).
  CachedOp(graph::Symbol sym, const std::vector<std::string>& data_names);
  ~CachedOp();

  const std::vector<std::string>& input_names() const { return input_names_; }
  size_t num_outputs() const { return sym_.outputs.size(); }
  // The position of input i among the graph's arguments, -1 for an
  // auxiliary state.
  int arg_index(size_t i) const { return arg_index_[i]; }
  // Executors bound so far (for tests and memory reports).
  size_t num_executors() const;

  // Runs the graph on `inputs` (input_names() order, one context) in the
  // thread's training mode; records under autograd. New output arrays.
  std::vector<NDArray> Forward(const std::vector<NDArray>& inputs);

  struct Slot;
  struct Call;
  // How an input's gradient is computed: none, into an array the executor
  // owns, or straight into the parameter's own gradient buffer.
  enum class Grad : uint8_t { kNone, kOwned, kDirect };

 private:
  std::vector<Grad> PlanGradients(const std::vector<NDArray>& inputs,
                                  std::vector<const void*>* claims) const;
  std::shared_ptr<Slot> TakeSlot(const std::vector<NDArray>& inputs, const std::vector<Grad>& grad,
                                 Context ctx);
  std::shared_ptr<Slot> Bind(const std::vector<NDArray>& inputs, const std::vector<Grad>& grad,
                             Context ctx, std::string key);
  std::string Key(const std::vector<NDArray>& inputs, const std::vector<Grad>& grad,
                  Context ctx) const;

  graph::Symbol sym_;
  std::vector<std::string> input_names_;
  std::vector<bool> is_data_;   // per input
  std::vector<int> arg_index_;  // per input: its place in ListArguments, or -1
  std::vector<int> aux_index_;  // per input: its place in ListAuxiliaryStates, or -1
  size_t num_args_ = 0, num_aux_ = 0;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Slot>> slots_;
};

}  // namespace tessera::autograd
