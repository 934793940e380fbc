#include "engine/autograd/cached_op.h"

#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "engine/autograd/autograd.h"
#include "engine/base/error.h"
#include "engine/graph/executor.h"
#include "engine/op/deferred_init.h"
#include "engine/op/op.h"
#include "engine/op/op_attr_types.h"

namespace tessera::autograd {

using graph::NodeEntry;
using graph::NodePtr;
using op::Node;

namespace {

// Gradient buffers an executor writes directly (a parameter's own buffer,
// attach_grad with 'write'), held from the recorded forward to its backward.
// Two executors writing one buffer would overwrite each other's gradient
// before autograd sums them: a buffer held here makes the next call compute
// into an array of its own instead.
struct Claims {
  std::mutex mu;
  std::unordered_set<const void*> held;
  bool TryHold(const void* v) {
    std::lock_guard<std::mutex> lock(mu);
    return held.insert(v).second;
  }
  void Drop(const void* v) {
    std::lock_guard<std::mutex> lock(mu);
    held.erase(v);
  }
};
Claims& GradClaims() {
  static Claims* c = new Claims;  // used from static destructors: never freed
  return *c;
}

}  // namespace

// One bound executor and what it was bound for.
struct CachedOp::Slot {
  std::string key;
  std::unique_ptr<graph::Executor> exe;
  std::vector<NDArray> data_args;  // per input: the executor's own array (data inputs)
  std::vector<Grad> grad;          // per input: how its gradient is computed
  bool in_use = false;             // reserved by a recorded forward (guarded by the op's mutex)
  uint64_t generation = 0;         // forwards run on it
};

// What a recorded _CachedOp node holds: the op, and the executor that ran
// its forward (released when the backward has run or the node goes away).
struct CachedOp::Call {
  std::shared_ptr<CachedOp> op;
  std::shared_ptr<Slot> slot;
  uint64_t generation = 0;
  size_t num_inputs = 0, num_outputs = 0;
  bool backward_ran = false;
  std::vector<const void*> claims;  // gradient buffers written directly

  Call(std::shared_ptr<CachedOp> o, std::shared_ptr<Slot> s, size_t n_in, size_t n_out,
       std::vector<const void*> held)
      : op(std::move(o)),
        slot(std::move(s)),
        generation(slot->generation),
        num_inputs(n_in),
        num_outputs(n_out),
        claims(std::move(held)) {}
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;
  ~Call() { Release(); }
  void Release() {
    for (const void* v : claims) GradClaims().Drop(v);
    claims.clear();
    if (!slot) return;
    std::lock_guard<std::mutex> lock(op->mu_);
    if (slot->generation == generation) slot->in_use = false;
  }
};

namespace {

using CallPtr = std::shared_ptr<CachedOp::Call>;

const CachedOp::Call& CallOf(const op::NodeAttrs& attrs) {
  const CallPtr* c = std::any_cast<CallPtr>(&attrs.parsed);
  TS_CHECK(c && *c) << attrs.op->name()
                    << ": this op is made by a hybridized block's call, not by name";
  return **c;
}

}  // namespace

CachedOp::CachedOp(graph::Symbol sym, const std::vector<std::string>& data_names)
    : sym_(std::move(sym)) {
  const std::vector<NodePtr> all = sym_.ListInputs(graph::Symbol::InputKind::kAll);
  const std::vector<NodePtr> args = sym_.ListInputs(graph::Symbol::InputKind::kArguments);
  const std::vector<NodePtr> aux = sym_.ListInputs(graph::Symbol::InputKind::kAuxStates);
  std::unordered_map<const Node*, int> arg_pos, aux_pos;
  for (size_t i = 0; i < args.size(); ++i) arg_pos[args[i].get()] = static_cast<int>(i);
  for (size_t i = 0; i < aux.size(); ++i) aux_pos[aux[i].get()] = static_cast<int>(i);
  num_args_ = args.size();
  num_aux_ = aux.size();
  for (const NodePtr& v : all) {
    input_names_.push_back(v->attrs.name);
    auto a = arg_pos.find(v.get());
    auto x = aux_pos.find(v.get());
    arg_index_.push_back(a == arg_pos.end() ? -1 : a->second);
    aux_index_.push_back(x == aux_pos.end() ? -1 : x->second);
    bool data = false;
    for (const std::string& d : data_names) data = data || d == v->attrs.name;
    is_data_.push_back(data);
    TS_CHECK(!data || arg_index_.back() >= 0)
        << "CachedOp: input '" << v->attrs.name << "' is an auxiliary state, not data";
  }
  for (const std::string& d : data_names) {
    bool found = false;
    for (const std::string& n : input_names_) found = found || n == d;
    TS_CHECK(found) << "CachedOp: '" << d << "' is not an input of the graph";
  }
}

CachedOp::~CachedOp() = default;

size_t CachedOp::num_executors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return slots_.size();
}

// Context, then per input: dtype and shape, the bound array's identity
// (parameters), how its gradient is computed (and into which buffer).
std::string CachedOp::Key(const std::vector<NDArray>& inputs, const std::vector<Grad>& grad,
                          Context ctx) const {
  std::ostringstream k;
  k << ctx.ToString();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const NDArray& a = inputs[i];
    k << '|' << DTypeName(a.dtype()) << a.shape() << "-od"[static_cast<int>(grad[i])];
    if (!is_data_[i]) k << a.var() << '+' << a.byte_offset();
    if (grad[i] == Grad::kDirect) k << '>' << GetGrad(a).var();
  }
  return k.str();
}

std::shared_ptr<CachedOp::Slot> CachedOp::Bind(const std::vector<NDArray>& inputs,
                                               const std::vector<Grad>& grad, Context ctx,
                                               std::string key) {
  auto slot = std::make_shared<Slot>();
  slot->key = std::move(key);
  slot->grad = grad;
  slot->data_args.resize(inputs.size());
  std::vector<NDArray> args(num_args_), arg_grads(num_args_), aux(num_aux_);
  std::vector<OpReqType> req(num_args_, kNullOp);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const NDArray& a = inputs[i];
    if (aux_index_[i] >= 0) {
      aux[static_cast<size_t>(aux_index_[i])] = a;
      continue;
    }
    const auto j = static_cast<size_t>(arg_index_[i]);
    if (is_data_[i]) {
      slot->data_args[i] = NDArray(a.shape(), ctx, a.dtype());
      args[j] = slot->data_args[i];
    } else {
      args[j] = a.Detach();
    }
    if (grad[i] == Grad::kOwned) arg_grads[j] = NDArray(a.shape(), ctx, a.dtype());
    if (grad[i] == Grad::kDirect) arg_grads[j] = GetGrad(a);
    if (grad[i] != Grad::kNone) req[j] = kWriteTo;
  }
  slot->exe = graph::Executor::Bind(sym_, ctx, std::move(args), std::move(arg_grads),
                                    std::move(req), std::move(aux));
  return slot;
}

std::shared_ptr<CachedOp::Slot> CachedOp::TakeSlot(const std::vector<NDArray>& inputs,
                                                   const std::vector<Grad>& grad, Context ctx) {
  std::string key = Key(inputs, grad, ctx);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& s : slots_)
      if (!s->in_use && s->key == key) {
        s->in_use = true;
        ++s->generation;
        return s;
      }
  }
  std::shared_ptr<Slot> s = Bind(inputs, grad, ctx, std::move(key));
  std::lock_guard<std::mutex> lock(mu_);
  s->in_use = true;
  s->generation = 1;
  slots_.push_back(s);
  return s;
}

// Under record, each input autograd tracks gets a gradient: written straight
// into a parameter's own buffer (attach_grad 'write', not held by another
// pending call: claimed here), else into an array of the executor's.
std::vector<CachedOp::Grad> CachedOp::PlanGradients(const std::vector<NDArray>& inputs,
                                                    std::vector<const void*>* claims) const {
  std::vector<Grad> grad(inputs.size(), Grad::kNone);
  if (!IsRecording()) return grad;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const NDArray& a = inputs[i];
    if (aux_index_[i] >= 0 || !a.ag_node()) continue;
    grad[i] = Grad::kOwned;
    const NDArray buffer = is_data_[i] ? NDArray() : GetGrad(a);
    if (buffer.is_none() || GetGradReq(a) != kWriteTo || buffer.shape() != a.shape() ||
        buffer.dtype() != a.dtype() || !GradClaims().TryHold(buffer.var()))
      continue;
    claims->push_back(buffer.var());
    grad[i] = Grad::kDirect;
  }
  return grad;
}

std::vector<NDArray> CachedOp::Forward(const std::vector<NDArray>& inputs) {
  TS_CHECK(inputs.size() == input_names_.size())
      << "CachedOp: " << inputs.size() << " inputs given, the graph has " << input_names_.size();
  const Context ctx = inputs.empty() ? Context::CPU() : inputs[0].ctx();
  for (size_t i = 0; i < inputs.size(); ++i) {
    TS_CHECK(!inputs[i].is_none()) << "CachedOp: input '" << input_names_[i] << "' is empty";
    TS_CHECK(inputs[i].ctx() == ctx)
        << "CachedOp: input '" << input_names_[i] << "' is on " << inputs[i].ctx().ToString()
        << ", input '" << input_names_[0] << "' on " << ctx.ToString();
  }
  std::vector<const void*> claims;
  const std::vector<Grad> grad = PlanGradients(inputs, &claims);
  bool any_grad = false;
  for (Grad g : grad) any_grad = any_grad || g != Grad::kNone;
  std::shared_ptr<Slot> slot = TakeSlot(inputs, grad, ctx);
  for (size_t i = 0; i < inputs.size(); ++i)
    if (is_data_[i]) CopyFromTo(inputs[i], slot->data_args[i]);
  slot->exe->Forward(IsTraining());
  std::vector<NDArray> out;
  out.reserve(num_outputs());
  for (const NDArray& o : slot->exe->outputs()) out.push_back(o.CopyTo(ctx));
  if (!any_grad) {
    TS_DCHECK(claims.empty());
    std::lock_guard<std::mutex> lock(mu_);
    slot->in_use = false;
    return out;
  }
  auto attrs = std::make_shared<op::NodeAttrs>();
  attrs->op = op::Op::Get("_CachedOp");
  attrs->parsed = std::make_shared<Call>(shared_from_this(), slot, inputs.size(), out.size(),
                                         std::move(claims));
  RecordCall(attrs, inputs, &out);
  return out;
}

namespace {

// _backward_CachedOp: the executor's backward from the output gradients;
// the gradients of the inputs that wanted one (none arrays for the others,
// which autograd does not read). A gradient written into a parameter's own
// buffer is that buffer: autograd sees it is already in place.
std::vector<NDArray> RunBackward(const op::NodeAttrs& attrs, const std::vector<NDArray>& ograds) {
  auto& call = const_cast<CachedOp::Call&>(CallOf(attrs));
  // The executor's plan lets backward reuse the memory of the forward values
  // it has read, so one forward serves one backward.
  TS_CHECK(!call.backward_ran)
      << "backward through a hybridized block runs once per forward: retain_graph = true "
         "cannot take a second backward through it (call the block again under "
         "mx.autograd.record, or hybridize(false))";
  TS_CHECK(call.slot && call.slot->generation == call.generation)
      << "backward through a hybridized block: its forward's state is gone";
  call.backward_ran = true;
  CachedOp::Slot& s = *call.slot;
  s.exe->Backward(ograds);
  const auto& grads = s.exe->grad_arrays();
  std::vector<NDArray> out(call.num_inputs);
  for (size_t i = 0; i < call.num_inputs; ++i) {
    const int a = call.op->arg_index(i);
    if (a >= 0 && s.grad[i] != CachedOp::Grad::kNone) out[i] = grads[static_cast<size_t>(a)];
    TS_DCHECK(s.grad[i] == CachedOp::Grad::kNone || !out[i].is_none());
  }
  call.Release();
  return out;
}

std::vector<NodeEntry> CachedOpGradient(const NodePtr& n, const std::vector<NodeEntry>& ograds) {
  NodePtr b = Node::Create();
  b->attrs.op = op::Op::Get("_backward_CachedOp");
  b->attrs.name = n->attrs.name + "_backward";
  b->attrs.parsed = n->attrs.parsed;
  b->inputs = ograds;
  b->control_deps.push_back(n);
  std::vector<NodeEntry> out;
  for (uint32_t i = 0; i < n->inputs.size(); ++i) out.push_back({b, i, 0});
  return out;
}

uint32_t NumIn(const op::NodeAttrs& attrs) {
  return static_cast<uint32_t>(CallOf(attrs).num_inputs);
}
uint32_t NumOut(const op::NodeAttrs& attrs) {
  return static_cast<uint32_t>(CallOf(attrs).num_outputs);
}

// On the registry's first use (engine/op/deferred_init.h).
void RegisterCachedOps() {
  TS_REGISTER_OP(_CachedOp)
      .describe(
          "A hybridized block's graph run as one recorded call (made by the block, not by name).")
      .set_num_inputs(NumIn)
      .set_num_outputs(NumOut)
      .set_attr<op::FGradient>("FGradient", CachedOpGradient);

  TS_REGISTER_OP(_backward_CachedOp)
      .describe("The gradient of _CachedOp: its executor's backward.")
      .set_num_inputs(NumOut)
      .set_num_outputs(NumIn)
      .set_attr<op::TIsBackward>("TIsBackward", true)
      .set_attr<FInvokeOnCaller>("FInvokeOnCaller", RunBackward);
}

}  // namespace

TS_RUN_ON_REGISTRY_USE(RegisterCachedOps);

}  // namespace tessera::autograd
