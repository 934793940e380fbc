// The executor: a symbol bound to arrays on a device. Binding builds the
// gradient graph (when any argument wants a gradient), infers every shape
// and dtype, plans memory, and turns every node into an engine push with its
// read and write variables, so forward and backward overlap with whatever
// the caller does next, exactly like imperative NDArray calls.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/context.h"
#include "engine/base/tblob.h"
#include "engine/graph/symbol.h"
#include "engine/ndarray/ndarray.h"

namespace tessera::graph {

class Executor {
 public:
  virtual ~Executor() = default;

  // Binds `sym` to given arrays: `args` in ListArguments order, `arg_grads`
  // the same length (a none array where grad_req is kNullOp), `grad_req` one
  // per argument (kNullOp, kWriteTo or kAddTo; empty: write for every
  // argument with a gradient array), `aux` in ListAuxiliaryStates order.
  // Shapes and dtypes must agree with inference; errors name the argument.
  // `shared_exec` (MXNet's shared_exec, for BucketingModule): the internal
  // storage is taken from that executor's blocks where they are big enough,
  // so executors of one network at several input sizes hold about the
  // largest one's memory. They must then not run interleaved: a forward
  // and its backward on one before the other runs.
  static std::unique_ptr<Executor> Bind(const Symbol& sym, Context ctx, std::vector<NDArray> args,
                                        std::vector<NDArray> arg_grads,
                                        std::vector<OpReqType> grad_req, std::vector<NDArray> aux,
                                        const Executor* shared_exec = nullptr);

  // Allocates the arguments, their gradients and the auxiliary states from
  // the shapes given by name (the rest inferred); `types` by name (default
  // float32); `grad_req` by argument name (missing names: `default_req`).
  static std::unique_ptr<Executor> SimpleBind(const Symbol& sym, Context ctx,
                                              const std::map<std::string, Shape>& shapes,
                                              const std::map<std::string, DType>& types = {},
                                              const std::map<std::string, OpReqType>& grad_req = {},
                                              OpReqType default_req = kWriteTo);

  // Pushes the forward nodes. is_train: the ops' training mode; backward
  // needs a forward with is_train = true before it.
  virtual void Forward(bool is_train) = 0;
  // Pushes the backward nodes. `head_grads` one per output (may be empty
  // when every output is a loss whose op needs no head gradient: then ones).
  // Each backward needs a forward with is_train = true of its own: the plan
  // lets backward reuse the memory of forward values once read.
  virtual void Backward(const std::vector<NDArray>& head_grads) = 0;

  // Monitoring (MXNet's set_monitor_callback): once set, each node is
  // pushed on its own and, right after, `fn` gets the name and array of
  // each of its outputs ("fc1_output"), and with `all` first those of its
  // inputs ("fc1_data", "fc1_weight"). The values are not computed yet:
  // `fn` pushes work on them (statistics as engine ops), it must not wait on
  // them. An empty `fn` turns monitoring off.
  using MonitorFn = std::function<void(const std::string& name, const NDArray& array)>;
  virtual void SetMonitorCallback(MonitorFn fn, bool all) = 0;

  virtual const Symbol& symbol() const = 0;
  virtual const std::vector<NDArray>& outputs() const = 0;
  virtual const std::vector<NDArray>& arg_arrays() const = 0;
  virtual const std::vector<NDArray>& grad_arrays() const = 0;  // none where req is null
  virtual const std::vector<OpReqType>& grad_req() const = 0;
  virtual const std::vector<NDArray>& aux_arrays() const = 0;
  virtual Context ctx() const = 0;

  // Name -> array views of the lists above (grad_dict: arguments with a
  // gradient array only).
  std::map<std::string, NDArray> ArgDict() const;
  std::map<std::string, NDArray> GradDict() const;
  std::map<std::string, NDArray> AuxDict() const;
  // Copies (pushes) the given arrays into the arguments and auxiliary states
  // of the same names; shapes must match. A name the symbol does not have is
  // an error unless allow_extra.
  void CopyParamsFrom(const std::map<std::string, NDArray>& args,
                      const std::map<std::string, NDArray>& aux = {}, bool allow_extra = false);

  // A new executor for new input shapes (by name, the rest as before).
  // Arguments whose shape is unchanged are shared; smaller ones are views
  // of the old memory; larger ones are new arrays.
  virtual std::unique_ptr<Executor> Reshape(const std::map<std::string, Shape>& shapes) const = 0;

  // The nodes in execution order with their shapes and storage, and the
  // memory plan against a plan without sharing.
  virtual std::string DebugStr() const = 0;

  // Bytes of the internal (planned) storage, and what the same entries
  // would take with no sharing and no in-place.
  virtual size_t planned_bytes() const = 0;
  virtual size_t unshared_bytes() const = 0;
  // The blocks holding the internal storage (what shared_exec shares).
  virtual const std::vector<NDArray>& storage_blocks() const = 0;
};

}  // namespace tessera::graph
