#include "engine/ndarray/imperative.h"

#include <algorithm>
#include <array>
#include <functional>
#include <string>

#include "engine/base/array_bytes.h"
#include "engine/base/small_vector.h"
#include "engine/ndarray/op_call.h"
#include "engine/op/infer_utils.h"

namespace tessera {

using engine::Engine;
using op::NodeAttrs;
using op::Op;

namespace {
RecordHook g_record_hook = nullptr;
}  // namespace

RecordState& ThreadRecordState() {
  thread_local RecordState state;
  return state;
}

void SetRecordHook(RecordHook hook) {
  g_record_hook = hook;
}

namespace {

std::shared_ptr<const NodeAttrs> ParseNew(std::string_view op_name, op::ParamDict params) {
  auto attrs = std::make_shared<NodeAttrs>();
  attrs->dict = std::move(params);
  Op::Get(op_name)->ParseAttrs(attrs.get());
  return attrs;
}

// Calls without parameters (`a + b` in a loop) parse the same empty
// dictionary every time: each thread keeps the result per op name. Attributes
// are immutable once parsed, so calls may share them.
std::shared_ptr<const NodeAttrs> ParseWithoutParams(std::string_view op_name) {
  struct Entry {
    std::string name;
    std::shared_ptr<const NodeAttrs> attrs;
  };
  constexpr size_t kSlots = 32;
  thread_local std::array<Entry, kSlots> cache;
  Entry& e = cache[std::hash<std::string_view>{}(op_name) % kSlots];
  if (e.attrs && e.name == op_name) return e.attrs;
  auto attrs = ParseNew(op_name, {});
  e.name = op_name;
  e.attrs = attrs;
  return attrs;
}

}  // namespace

std::shared_ptr<const NodeAttrs> MakeAttrs(std::string_view op_name, op::ParamDict params) {
  if (params.empty()) return ParseWithoutParams(op_name);
  return ParseNew(op_name, std::move(params));
}

namespace {

template <typename Shapes>
std::string ShapeList(const Shapes& shapes) {
  std::string s;
  for (const Shape& sh : shapes) s += (s.empty() ? "" : ", ") + sh.ToString();
  return s;
}

Context PickContext(const NodeAttrs& attrs, InputList inputs, const InvokeOptions& opt) {
  if (!inputs.empty()) {
    const Context ctx = inputs[0].ctx();
    for (size_t i = 1; i < inputs.size(); ++i)
      TS_CHECK(inputs[i].ctx() == ctx)
          << op::OpLabel(attrs) << ": input " << i << " is on " << inputs[i].ctx().ToString()
          << " but input 0 is on " << ctx.ToString() << " (copy it with copyto first)";
    return ctx;
  }
  if (opt.ctx) return *opt.ctx;
  auto it = attrs.dict.find("ctx");
  if (it != attrs.dict.end() && !it->second.empty()) return Context::Parse(it->second);
  return Context::CPU();
}

// The vectors a call hands to the registry's inference functions, kept per
// thread so that a call does not allocate them. A stack of them, because
// inference may run Lua (a Custom op's infer_shape) that invokes ops again.
struct InferScratch {
  std::vector<Shape> in_shapes, out_shapes;
  std::vector<DType> in_types, out_types;
  opcall::KernelCall call;  // copied into a pushed op's closure
};

class ScratchLease {
 public:
  ScratchLease() {
    if (depth_ == stack_.size()) stack_.push_back(std::make_unique<InferScratch>());
    s_ = stack_[depth_++].get();
  }
  // Sizes the inference vectors: inputs are all set by the caller, outputs
  // start unknown.
  void SizeForInference(size_t n_in, size_t n_out) {
    s_->in_shapes.resize(n_in);
    s_->in_types.resize(n_in);
    s_->out_shapes.assign(n_out, Shape());
    s_->out_types.assign(n_out, DType::kUnknown);
  }
  ~ScratchLease() { --depth_; }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  InferScratch* operator->() const { return s_; }

 private:
  static thread_local std::vector<std::unique_ptr<InferScratch>> stack_;
  static thread_local size_t depth_;
  InferScratch* s_;
};
thread_local std::vector<std::unique_ptr<InferScratch>> ScratchLease::stack_;
thread_local size_t ScratchLease::depth_ = 0;

void InferShapes(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  static const auto& finfer = Op::GetAttr<op::FInferShape>("FInferShape");
  const SmallVector<Shape, 4> given(in->begin(), in->end());
  const op::FInferShape* f = finfer.find(attrs.op);
  TS_CHECK(f) << attrs.op->name() << " has no shape inference (FInferShape)";
  const bool ok = (*f)(attrs, in, out);
  TS_CHECK(ok && op::AllKnown(*out))
      << op::OpLabel(attrs) << ": cannot infer the output shape from input shapes ("
      << ShapeList(given) << ")";
  for (size_t i = 0; i < in->size(); ++i)
    TS_CHECK((*in)[i] == given[i]) << op::OpLabel(attrs) << ": input " << i << " has shape "
                                   << given[i] << " but " << (*in)[i] << " is required";
}

void InferTypes(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  static const auto& finfer = Op::GetAttr<op::FInferType>("FInferType");
  const SmallVector<DType, 8> given(in->begin(), in->end());
  const op::FInferType* f = finfer.find(attrs.op);
  const bool ok = f ? (*f)(attrs, in, out) : op::SameTypeAll(attrs, in, out);
  TS_CHECK(ok && op::AllKnown(*out)) << op::OpLabel(attrs) << ": cannot infer the output dtype";
  for (size_t i = 0; i < in->size(); ++i)
    TS_CHECK((*in)[i] == given[i])
        << op::OpLabel(attrs) << ": input " << i << " has dtype " << DTypeName(given[i]) << " but "
        << DTypeName((*in)[i]) << " is required";
}

// Every output an op infers is sized here, before anything is allocated:
// a shape function fed extreme parameters (tile's reps, one_hot's depth, a
// Custom op's infer_shape) must not make an array whose size wraps. Once
// per inference, not per call: the memo below only holds checked shapes.
void CheckOutputSizes(const NodeAttrs& attrs, const std::vector<Shape>& shapes,
                      const std::vector<DType>& types) {
  size_t bytes = 0;
  for (size_t o = 0; o < shapes.size(); ++o)
    if (!FitsArray(shapes[o], types[o], &bytes))
      ThrowArrayTooLarge(
          shapes[o], types[o],
          op::OpLabel(attrs) + (shapes.size() > 1 ? ": output " + std::to_string(o) : ""));
}

// The output shapes and dtypes inferred for recent calls, per thread. Scalar
// code repeats one call on arrays of one shape (`c = a + b` in a loop), and
// inference is a function of the attributes and the input shapes and dtypes
// alone, so a repeat is answered from here. Entries are keyed by the
// attributes object, held weakly: while an entry lives, the object's address
// is not reused for another (make_shared) or the entry has expired. An entry
// also keeps what the registry says of the op for a device kind (OpOnDevice).
class InferMemo {
 public:
  static constexpr size_t kMaxInputs = 4, kMaxOutputs = 2;

  struct Entry {
    const NodeAttrs* attrs = nullptr;
    std::weak_ptr<const NodeAttrs> owner;
    size_t n_in = 0, n_out = 0;
    Shape in_shapes[kMaxInputs], out_shapes[kMaxOutputs];
    DType in_types[kMaxInputs], out_types[kMaxOutputs];
    int info_on = -1;  // the device kind `info` was looked up for: 0 cpu, 1 gpu
    opcall::OpOnDevice info;
  };

  // The entry of `attrs` when it was last inferred here with inputs of
  // these shapes and dtypes; else null.
  Entry* Find(const std::shared_ptr<const NodeAttrs>& attrs, InputList inputs, size_t n_out) {
    Entry& e = slots_[SlotOf(attrs.get())];
    if (e.attrs != attrs.get() || e.owner.expired() || e.n_in != inputs.size() || e.n_out != n_out)
      return nullptr;
    for (size_t i = 0; i < e.n_in; ++i)
      if (e.in_types[i] != inputs[i].dtype() || e.in_shapes[i] != inputs[i].shape()) return nullptr;
    return &e;
  }

  // The new entry, or null when the call has too many inputs or outputs.
  Entry* Store(const std::shared_ptr<const NodeAttrs>& attrs, const std::vector<Shape>& in_shapes,
               const std::vector<DType>& in_types, const std::vector<Shape>& out_shapes,
               const std::vector<DType>& out_types) {
    if (in_shapes.size() > kMaxInputs || out_shapes.size() > kMaxOutputs) return nullptr;
    Entry& e = slots_[SlotOf(attrs.get())];
    e.attrs = attrs.get();
    e.owner = attrs;
    e.n_in = in_shapes.size();
    e.n_out = out_shapes.size();
    std::copy(in_shapes.begin(), in_shapes.end(), e.in_shapes);
    std::copy(in_types.begin(), in_types.end(), e.in_types);
    std::copy(out_shapes.begin(), out_shapes.end(), e.out_shapes);
    std::copy(out_types.begin(), out_types.end(), e.out_types);
    e.info_on = -1;
    return &e;
  }

 private:
  static constexpr size_t kSlots = 8;
  static size_t SlotOf(const NodeAttrs* a) {
    return (reinterpret_cast<uintptr_t>(a) >> 4) % kSlots;
  }
  std::array<Entry, kSlots> slots_;
};

// Ops that touch at most this many elements (inputs and outputs together) run
// on the thread that makes them ready, often the caller itself: their work
// takes less than handing them to a worker on another core (measured by
// scripts/bench/ndarray_loop.lua).
constexpr int64_t kInlineMaxElements = 1024;

bool RunsInline(InputList inputs, const std::vector<NDArray>& outputs) {
  int64_t n = 0;
  for (size_t i = 0; i < inputs.size(); ++i) n += inputs[i].Size();
  for (const NDArray& a : outputs) n += a.Size();
  return n <= kInlineMaxElements;
}

// The memory of a call's new outputs, which the run-ahead bound counts.
size_t NewBytes(const std::vector<NDArray>& outputs) {
  size_t n = 0;
  for (const NDArray& a : outputs) n += static_cast<size_t>(a.Size()) * DTypeSize(a.dtype());
  return n;
}

bool InplaceAllowed(const NodeAttrs& attrs, int in, int out) {
  static const auto& finplace = Op::GetAttr<op::FInplaceOption>("FInplaceOption");
  const op::FInplaceOption* f = finplace.find(attrs.op);
  if (!f) return false;
  for (auto [i, o] : (*f)(attrs))
    if (i == in && o == out) return true;
  return false;
}

// ---- the steps of a call ----------------------------------------------------

// Given outputs are all the op's or, as MXNet allows, its visible ones (the
// hidden ones, such as Dropout's mask, are then made by the call).
[[gnu::noinline]] void CheckVisibleOutputs(const NodeAttrs& attrs, uint32_t n_out,
                                           const std::vector<NDArray>& outputs) {
  static const auto& visible = op::Op::GetAttr<op::FNumVisibleOutputs>("FNumVisibleOutputs");
  const op::FNumVisibleOutputs* f = visible.find(attrs.op);
  const uint32_t n_vis = f ? (*f)(attrs) : n_out;
  TS_CHECK(outputs.size() == n_vis)
      << op::OpLabel(attrs) << ": produces " << n_out << " outputs"
      << (n_vis != n_out ? " (" + std::to_string(n_vis) + " visible)" : std::string()) << ", "
      << outputs.size() << " given";
}

// Step 1: the inputs and given outputs fit the op. Returns its output count.
[[gnu::always_inline]] inline uint32_t CheckCall(const NodeAttrs& attrs, InputList inputs,
                                                 const std::vector<NDArray>& outputs) {
  const Op* op = attrs.op;
  TS_CHECK(op) << "invoke: node has no operator";
  const uint32_t n_in = op->NumInputs(attrs), n_out = op->NumOutputs(attrs);
  TS_CHECK(inputs.size() == n_in) << op::OpLabel(attrs) << ": takes " << n_in << " input"
                                  << (n_in == 1 ? "" : "s") << ", got " << inputs.size();
  for (size_t i = 0; i < inputs.size(); ++i)
    TS_CHECK(!inputs[i].is_none()) << op::OpLabel(attrs) << ": input " << i << " is empty (none)";
  if (!outputs.empty() && outputs.size() != n_out) CheckVisibleOutputs(attrs, n_out, outputs);
  for (size_t o = 0; o < outputs.size(); ++o)
    TS_CHECK(!outputs[o].is_none()) << op::OpLabel(attrs) << ": out " << o << " is empty";
  return n_out;
}

// What step 2 found: the outputs' shapes and dtypes (in the memo or the
// scratch) and what the registry says of the op on the call's device.
struct Inferred {
  const Shape* out_shapes;
  const DType* out_types;
  opcall::OpOnDevice info;
};

// Step 2: output shapes and dtypes, and the registry's entries for the op,
// from the memo when this call repeats a recent one. Stateful ops are left
// out of the memo: their inference may run user code (a Custom op's
// infer_shape), which should see every call. The scratch's input shapes and
// dtypes are filled whenever inference runs (stateful ops always).
Inferred InferCall(const std::shared_ptr<const NodeAttrs>& attrs_ptr, InputList inputs,
                   const std::vector<NDArray>& outputs, size_t n_out, Context ctx,
                   ScratchLease& scratch) {
  const NodeAttrs& attrs = *attrs_ptr;
  const bool on_gpu = ctx.is_gpu();
  thread_local InferMemo memo;
  InferMemo::Entry* e = outputs.empty() ? memo.Find(attrs_ptr, inputs, n_out) : nullptr;
  if (e && e->info_on == int{on_gpu}) return {e->out_shapes, e->out_types, e->info};
  Inferred r;
  if (e) {
    r.out_shapes = e->out_shapes;
    r.out_types = e->out_types;
  } else {
    scratch.SizeForInference(inputs.size(), n_out);
    for (size_t i = 0; i < inputs.size(); ++i) {
      scratch->in_shapes[i] = inputs[i].shape();
      scratch->in_types[i] = inputs[i].dtype();
    }
    for (size_t o = 0; o < outputs.size(); ++o) {
      scratch->out_shapes[o] = outputs[o].shape();
      scratch->out_types[o] = outputs[o].dtype();
    }
    InferShapes(attrs, &scratch->in_shapes, &scratch->out_shapes);
    InferTypes(attrs, &scratch->in_types, &scratch->out_types);
    CheckOutputSizes(attrs, scratch->out_shapes, scratch->out_types);
    r.out_shapes = scratch->out_shapes.data();
    r.out_types = scratch->out_types.data();
  }
  r.info = opcall::LookUpOp(attrs, on_gpu);
  if (!e && outputs.empty() && !r.info.fcreate)
    e = memo.Store(attrs_ptr, scratch->in_shapes, scratch->in_types, scratch->out_shapes,
                   scratch->out_types);
  if (e) {
    e->info_on = int{on_gpu};
    e->info = r.info;
  }
  return r;
}

// Step 3a: new outputs allocated, or given ones on the right device (and the
// hidden ones made where only the visible ones were given).
[[gnu::always_inline]] inline void MakeOutputs(const NodeAttrs& attrs, const Inferred& inf,
                                               size_t n_out, Context ctx,
                                               std::vector<NDArray>* outputs) {
  const size_t given = outputs->size();
  for (size_t o = 0; o < given; ++o)
    TS_CHECK((*outputs)[o].ctx() == ctx)
        << op::OpLabel(attrs) << ": out " << o << " is on " << (*outputs)[o].ctx().ToString()
        << ", the op runs on " << ctx.ToString();
  if (given == n_out) return;
  if (outputs->capacity() < n_out) outputs->reserve(n_out);
  for (size_t o = given; o < n_out; ++o)
    outputs->emplace_back(inf.out_shapes[o], ctx, inf.out_types[o]);
}

// Step 3, with donated inputs: each new output the op may write in place of a
// donated input of its shape, dtype and context takes that input's array;
// the others are allocated. True when one was taken (the outputs are then
// handled as given ones, so the write becomes kWriteInplace).
bool TakeDonatedOutputs(const NodeAttrs& attrs, const Inferred& inf, InputList inputs,
                        const InvokeOptions& opt, size_t n_out, Context ctx,
                        std::vector<NDArray>* outputs) {
  static const auto& finplace = Op::GetAttr<op::FInplaceOption>("FInplaceOption");
  const op::FInplaceOption* f = finplace.find(attrs.op);
  if (!f) return false;
  outputs->resize(n_out);
  uint64_t donated = opt.donated;
  bool took = false;
  for (auto [i, o] : (*f)(attrs)) {
    if (i < 0 || size_t(i) >= inputs.size() || i >= 64 || !(donated >> i & 1)) continue;
    if (o < 0 || size_t(o) >= n_out || !(*outputs)[o].is_none()) continue;
    if (!opt.req.empty() && opt.req[o] != kWriteTo) continue;  // not written: nothing to gain
    const NDArray& in = inputs[size_t(i)];
    if (in.shape() != inf.out_shapes[o] || in.dtype() != inf.out_types[o] || in.ctx() != ctx ||
        in.byte_offset() != 0 || !in.CoversChunk())
      continue;
    (*outputs)[o] = in;
    donated &= ~(uint64_t{1} << i);  // one output per input
    took = true;
  }
  for (size_t o = 0; o < n_out; ++o)
    if ((*outputs)[o].is_none()) (*outputs)[o] = NDArray(inf.out_shapes[o], ctx, inf.out_types[o]);
  return took;
}

// What the kernel writes: the outputs, or a copy with temporaries in place of
// given outputs that overlap an input (new ones cannot; made only then), each
// copied back once the kernel is pushed.
struct Overlap {
  std::vector<NDArray> replaced;
  std::vector<std::pair<NDArray, NDArray>> copy_back;  // (temporary, output)
};

// Step 3b with given outputs or requests: the write requests (write, or what
// the caller asked); an output sharing memory with an input is written in
// place only where the op allows it, else through a temporary. Returns the
// arrays the kernel writes.
const std::vector<NDArray>* PlanGivenWrites(const NodeAttrs& attrs, InputList inputs,
                                            const std::vector<NDArray>& outputs, bool given_outputs,
                                            Context ctx, const InvokeOptions& opt,
                                            std::vector<OpReqType>* req,
                                            std::unique_ptr<Overlap>* overlap) {
  const size_t n_out = outputs.size();
  if (!opt.req.empty()) {
    TS_CHECK(opt.req.size() == n_out) << op::OpLabel(attrs) << ": " << opt.req.size()
                                      << " write requests for " << n_out << " outputs";
    *req = opt.req;
  }
  const std::vector<NDArray>* written = &outputs;
  for (size_t o = 0; given_outputs && o < n_out; ++o) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const NDArray& out = outputs[o];
      if (!out.SameChunk(inputs[i])) continue;
      const bool same_view =
          out.byte_offset() == inputs[i].byte_offset() && out.shape() == inputs[i].shape();
      if (same_view && (*req)[o] == kWriteTo && InplaceAllowed(attrs, int(i), int(o))) {
        (*req)[o] = kWriteInplace;
      } else {
        NDArray tmp(out.shape(), ctx, out.dtype());
        if ((*req)[o] == kAddTo) CopyFromTo(out, tmp);
        if (!*overlap) *overlap = std::make_unique<Overlap>();
        (*overlap)->copy_back.emplace_back(tmp, out);
        if (written != &(*overlap)->replaced) {
          (*overlap)->replaced = outputs;
          written = &(*overlap)->replaced;
        }
        (*overlap)->replaced[o] = tmp;
      }
      break;
    }
  }
  return written;
}

// Step 3b inline: new outputs written plainly, the usual call, take no call.
[[gnu::always_inline]] inline const std::vector<NDArray>* PlanWrites(
    const NodeAttrs& attrs, InputList inputs, const std::vector<NDArray>& outputs,
    bool given_outputs, Context ctx, const InvokeOptions& opt, std::vector<OpReqType>* req,
    std::unique_ptr<Overlap>* overlap) {
  req->assign(outputs.size(), kWriteTo);
  if (!given_outputs && opt.req.empty()) return &outputs;
  return PlanGivenWrites(attrs, inputs, outputs, given_outputs, ctx, opt, req, overlap);
}

// Step 4: the call's data (blobs, or arrays for NDArray-level computes).
[[gnu::always_inline]] inline void FillCall(opcall::KernelCall* call,
                                            const opcall::OpOnDevice& info, const NodeAttrs& attrs,
                                            InputList inputs, const std::vector<NDArray>& written) {
  call->kernel = info.kernel;
  call->attrs = &attrs;
  call->in.resize(inputs.size());
  call->out.resize(written.size());
  for (size_t i = 0; i < inputs.size(); ++i) inputs[i].DataInto(&call->in[i]);
  for (size_t o = 0; o < written.size(); ++o) written[o].DataInto(&call->out[o]);
  if (info.kernel.fstate_ex) {
    call->in_arrays = inputs.ToVector();
    call->out_arrays = written;
  }
}

// The engine variables of a call: inputs read; outputs, mutated inputs and
// the state written.
struct CallVars {
  SmallVector<VarHandle, 8> reads, writes;
};

// Step 5, now: a tiny CPU op without resources (whose state other ops may
// hold) runs on the calling thread when its arrays are free, without a push's
// allocations. New outputs need no engine variable while nothing else has
// seen them; a failure is pushed as a failing op that writes them, which
// reports it as a kernel's. False when it could not run now.
bool RunNow(const opcall::KernelCall& call, const std::vector<NDArray>& written, bool fresh_outputs,
            bool is_train, Context ctx, CallVars* vars, int priority) {
  const NodeAttrs& attrs = *call.attrs;
  const op::OpContext octx{
      is_train, RunContext{ctx, nullptr, Engine::Get()->OpThreads()}, {}, nullptr};
  std::exception_ptr failed;
  auto run = [&] {
    try {
      opcall::RunKernel(call, octx);
    } catch (...) {
      if (!fresh_outputs) throw;
      failed = std::current_exception();
    }
  };
  const char* name = attrs.op->name().c_str();
  const bool ran = Engine::Get()->TryRunNow(run, vars->reads, vars->writes, name);
  if (fresh_outputs && (!ran || failed))
    for (const NDArray& a : written) vars->writes.push_back(a.var());
  if (ran && failed)
    Engine::Get()->PushSync([failed](RunContext) { std::rethrow_exception(failed); }, ctx, {},
                            vars->writes, engine::FnProperty::kNormal, priority, name);
  return ran;
}

}  // namespace

void Invoke(const std::shared_ptr<const NodeAttrs>& attrs_ptr, InputList inputs,
            std::vector<NDArray>* outputs, const InvokeOptions& opt) {
  const NodeAttrs& attrs = *attrs_ptr;
  const uint32_t n_out = CheckCall(attrs, inputs, *outputs);
  const Context ctx = PickContext(attrs, inputs, opt);
  bool given_outputs = !outputs->empty();
  ScratchLease scratch;
  const Inferred inf = InferCall(attrs_ptr, inputs, *outputs, n_out, ctx, scratch);
  opcall::CheckKernel(inf.info, attrs, ctx);
  if (opt.donated && !given_outputs)
    given_outputs = TakeDonatedOutputs(attrs, inf, inputs, opt, n_out, ctx, outputs);
  MakeOutputs(attrs, inf, n_out, ctx, outputs);
  opcall::KernelCall& call = scratch->call;
  std::unique_ptr<Overlap> overlap;
  const std::vector<NDArray>& written =
      *PlanWrites(attrs, inputs, *outputs, given_outputs, ctx, opt, &call.req, &overlap);

  // Step 4: state, resources and data (tested here first: most calls have
  // neither, and the loop of tiny ops counts every instruction).
  if (inf.info.stateful())
    call.state = opcall::CreateState(inf.info, attrs, ctx, scratch->in_shapes, scratch->in_types);
  std::vector<op::Resource> resources;
  if (inf.info.fresource) opcall::RequestResources(inf.info, attrs, ctx, &resources);
  FillCall(&call, inf.info, attrs, inputs, written);
  CallVars vars;
  for (size_t i = 0; i < inputs.size(); ++i) vars.reads.push_back(inputs[i].var());
  // A given output that is accumulated into, left alone, or only partly
  // written (a view) is updated, not replaced: read as well.
  for (size_t o = 0; given_outputs && o < written.size(); ++o)
    if (call.req[o] != kWriteTo || !written[o].CoversChunk())
      vars.reads.push_back(written[o].var());
  const bool tiny =
      !call.state && !ctx.is_gpu() && resources.empty() && RunsInline(inputs, written);
  const bool fresh_outputs = tiny && !given_outputs;
  if (!fresh_outputs)
    for (const NDArray& a : written) vars.writes.push_back(a.var());
  opcall::AddMutatedInputs(
      inf.info, attrs, inputs.size(), [&](uint32_t i) { return inputs[i].var(); }, &vars.writes);
  if (call.state) vars.writes.push_back(call.state.var());

  // Step 5: run now, or push.
  const RecordState& record = ThreadRecordState();
  const bool is_train = opt.is_train || record.training;
  if (!tiny || !RunNow(call, written, fresh_outputs, is_train, ctx, &vars, opt.priority)) {
    opcall::PushOp(
        call.kernel.is_async,
        [call, owner = attrs_ptr, is_train, resources = std::move(resources)](
            const RunContext& rctx, opcall::DoneFn done) {
          opcall::RunKernel(call, op::OpContext{is_train, rctx, resources, std::move(done)});
        },
        ctx, vars.reads, vars.writes, opt.priority, attrs.op->name().c_str(),
        tiny ? engine::FnProperty::kAsync : engine::FnProperty::kNormal,
        given_outputs ? 0 : NewBytes(*outputs));
  }
  // Step 6: temporaries copied back, and the call recorded for autograd.
  if (overlap)
    for (auto& [tmp, dst] : overlap->copy_back) CopyFromTo(tmp, dst, opt.priority);
  // The scratch's call holds nothing past the call.
  call.attrs = nullptr;
  if (call.state) call.state = {};
  if (inf.info.kernel.fstate_ex) {
    call.in_arrays.clear();
    call.out_arrays.clear();
  }
  if (record.recording && g_record_hook) g_record_hook(attrs_ptr, inputs.ToVector(), outputs);
}

std::vector<NDArray> Invoke(std::string_view op_name, const std::vector<NDArray>& inputs,
                            op::ParamDict params, const InvokeOptions& opt) {
  std::vector<NDArray> outputs;
  Invoke(MakeAttrs(op_name, std::move(params)), inputs, &outputs, opt);
  return outputs;
}

NDArray NDArray::AsType(DType dtype) const {
  TS_CHECK(!is_none()) << "astype: the array is empty (none)";
  return Invoke("Cast", {*this}, {{"dtype", DTypeName(dtype)}})[0];
}

}  // namespace tessera
