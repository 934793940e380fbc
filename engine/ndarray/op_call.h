// The one path from an op call to the engine. Imperative Invoke
// (imperative.cc) and the executor (engine/graph/executor_ops.cc,
// executor_run.cc) both take these steps, and through them autograd's replay
// and custom ops (MXNet shares imperative_utils.h between its imperative path
// and cached graphs the same way):
//
//   LookUpOp          what the registry says of the op on a device kind
//   CheckKernel       the op has a kernel there, or the error that says why not
//   CreateState       a stateful op's state
//   RequestResources  temp space and random streams
//   AddMutatedInputs  the inputs the op writes (FMutateInputs), checked
//   RunKernel         the dispatch to the compute, on the engine's worker
//   PushOp            the engine push, sync or async
//
// The error texts of these steps are written here and nowhere else.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/base/small_vector.h"
#include "engine/ndarray/ndarray.h"
#include "engine/ndarray/op_attr_ndarray.h"
#include "engine/op/op_attr_types.h"

namespace tessera::opcall {

using op::NodeAttrs;

// What the registry says of an op for one device kind: its kernel and the
// attributes every call consults. Fixed once the op is registered, and at
// stable addresses (OpMap), so callers may keep it (Invoke's memo does).
struct OpOnDevice {
  op::DeviceKernel kernel;
  const op::FCreateOpState* fcreate = nullptr;
  const op::FResourceRequest* fresource = nullptr;
  const op::FMutateInputs* fmutate = nullptr;
  bool stateful() const { return kernel.fstate || kernel.fstate_ex; }
};

OpOnDevice LookUpOp(const NodeAttrs& attrs, bool on_gpu);

// Throws when `info` has no kernel: "<op> on gpu(0): this build has no CUDA"
// or "<op> has no CPU implementation", after `where` (say "bind: ").
void CheckKernel(const OpOnDevice& info, const NodeAttrs& attrs, Context ctx,
                 std::string_view where = {});

// The state of a stateful op (null for the others): made by the op's
// FCreateOpState, else `borrowed` (a backward node shares its forward
// node's); an error when neither exists.
op::OpStatePtr CreateState(const OpOnDevice& info, const NodeAttrs& attrs, Context ctx,
                           const std::vector<Shape>& in_shapes, const std::vector<DType>& in_types,
                           const op::OpStatePtr& borrowed = {}, std::string_view where = {});

// Appends the op's resources on ctx; the positions of the random streams go
// to `random_slots` when given (an executor draws them again at every push).
void RequestResources(const OpOnDevice& info, const NodeAttrs& attrs, Context ctx,
                      std::vector<op::Resource>* out, std::vector<size_t>* random_slots = nullptr);

// Appends var_of(i) for each input i the op writes besides its outputs; an
// input index past n_in is the op's error, named.
template <typename VarOf, typename Vars>
void AddMutatedInputs(const OpOnDevice& info, const NodeAttrs& attrs, size_t n_in, VarOf var_of,
                      Vars* mutate_vars);
[[noreturn]] void ThrowBadMutateIndex(const NodeAttrs& attrs, uint32_t i, size_t n_in);

// One call ready to run: the kernel, its state and its data. The attributes
// belong to whoever made the call (a graph node, an imperative call), which
// keeps them alive while the call may run.
struct KernelCall {
  op::DeviceKernel kernel;
  const NodeAttrs* attrs = nullptr;
  op::OpStatePtr state;
  std::vector<TBlob> in, out;                  // blob-level computes
  std::vector<NDArray> in_arrays, out_arrays;  // NDArray-level computes (fstate_ex)
  std::vector<OpReqType> req;
};

// Calls the kernel (on the engine's worker, inside the op's push).
void RunKernel(const KernelCall& call, const op::OpContext& octx);

// The function a pushed kernel runs: (run context, done). `done` is null for
// a sync op; an async op (ExecType::kAsync) ends by calling it.
using DoneFn = std::function<void(std::exception_ptr)>;

// Pushes `run` as one engine op. Async kernels are started by whichever
// thread makes them ready (they only hand their work on); sync ones run with
// `sync_prop` (kAsync: inline on that thread too, for tiny ops).
// `bytes`: the new memory of the call's outputs (the run-ahead bound).
template <typename Run>
void PushOp(bool is_async, Run run, Context ctx, engine::VarList const_vars,
            engine::VarList mutate_vars, int priority, const char* name,
            engine::FnProperty sync_prop = engine::FnProperty::kNormal, size_t bytes = 0) {
  using engine::Engine;
  if (is_async) {
    Engine::Get()->PushAsync(
        [run = std::move(run)](RunContext rctx, engine::CallbackOnComplete done) {
          run(rctx, [done](std::exception_ptr e) { e ? done(std::move(e)) : done(); });
        },
        ctx, const_vars, mutate_vars, engine::FnProperty::kAsync, priority, name, bytes);
  } else {
    Engine::Get()->PushSync([run = std::move(run)](RunContext rctx) { run(rctx, nullptr); }, ctx,
                            const_vars, mutate_vars, sync_prop, priority, name, bytes);
  }
}

template <typename VarOf, typename Vars>
void AddMutatedInputs(const OpOnDevice& info, const NodeAttrs& attrs, size_t n_in, VarOf var_of,
                      Vars* mutate_vars) {
  if (!info.fmutate) return;
  for (uint32_t i : (*info.fmutate)(attrs)) {
    if (i >= n_in) ThrowBadMutateIndex(attrs, i, n_in);
    mutate_vars->push_back(var_of(i));
  }
}

}  // namespace tessera::opcall
