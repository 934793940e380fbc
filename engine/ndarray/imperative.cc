#include "engine/ndarray/imperative.h"

#include <algorithm>
#include <array>
#include <functional>

#include "engine/base/small_vector.h"
#include "ops/registry/infer_utils.h"
#include "ops/registry/op_attr_ndarray.h"
#include "ops/registry/op_attr_types.h"

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
  std::vector<TBlob> in_blobs, out_blobs;  // copied into a pushed op's closure
  std::vector<OpReqType> req;
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

// The output shapes and dtypes inferred for recent calls, per thread. Scalar
// code repeats one call on arrays of one shape (`c = a + b` in a loop), and
// inference is a function of the attributes and the input shapes and dtypes
// alone, so a repeat is answered from here. Entries are keyed by the
// attributes object, held weakly: while an entry lives, the object's address
// is not reused for another (make_shared) or the entry has expired. An entry
// also keeps what the registry says of the op for a device kind (its kernel,
// resource and mutate-input attributes): fixed once the op is registered, and
// at stable addresses (OpMap).
class InferMemo {
 public:
  static constexpr size_t kMaxInputs = 4, kMaxOutputs = 2;

  struct Entry {
    const NodeAttrs* attrs = nullptr;
    std::weak_ptr<const NodeAttrs> owner;
    size_t n_in = 0, n_out = 0;
    Shape in_shapes[kMaxInputs], out_shapes[kMaxOutputs];
    DType in_types[kMaxInputs], out_types[kMaxOutputs];
    int kernel_on = -1;  // the device kind `kernel` was found for: 0 cpu, 1 gpu
    op::DeviceKernel kernel;
    const op::FResourceRequest* fresource = nullptr;
    const op::FMutateInputs* fmutate = nullptr;
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
    e.kernel_on = -1;
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

bool InplaceAllowed(const NodeAttrs& attrs, int in, int out) {
  static const auto& finplace = Op::GetAttr<op::FInplaceOption>("FInplaceOption");
  const op::FInplaceOption* f = finplace.find(attrs.op);
  if (!f) return false;
  for (auto [i, o] : (*f)(attrs))
    if (i == in && o == out) return true;
  return false;
}

}  // namespace

void Invoke(const std::shared_ptr<const NodeAttrs>& attrs_ptr, InputList inputs,
            std::vector<NDArray>* outputs, const InvokeOptions& opt) {
  const NodeAttrs& attrs = *attrs_ptr;
  const Op* op = attrs.op;
  TS_CHECK(op) << "invoke: node has no operator";
  const uint32_t n_in = op->NumInputs(attrs), n_out = op->NumOutputs(attrs);
  TS_CHECK(inputs.size() == n_in) << op::OpLabel(attrs) << ": takes " << n_in << " input"
                                  << (n_in == 1 ? "" : "s") << ", got " << inputs.size();
  for (size_t i = 0; i < inputs.size(); ++i)
    TS_CHECK(!inputs[i].is_none()) << op::OpLabel(attrs) << ": input " << i << " is empty (none)";
  const bool given_outputs = !outputs->empty();
  TS_CHECK(!given_outputs || outputs->size() == n_out)
      << op::OpLabel(attrs) << ": produces " << n_out << " outputs, " << outputs->size()
      << " given";
  const Context ctx = PickContext(attrs, inputs, opt);

  ScratchLease scratch;
  // Stateful ops are left out of the memo: their inference may run user code
  // (a Custom op's infer_shape), which should see every call. So a found
  // entry is never one of theirs, and they always fill the vectors below.
  static const auto& fcreate = Op::GetAttr<op::FCreateOpState>("FCreateOpState");
  thread_local InferMemo memo;
  InferMemo::Entry* memo_entry = given_outputs ? nullptr : memo.Find(attrs_ptr, inputs, n_out);
  std::vector<Shape>& in_shapes = scratch->in_shapes;
  std::vector<DType>& in_types = scratch->in_types;
  const Shape* out_shapes;
  const DType* out_types;
  if (memo_entry) {
    out_shapes = memo_entry->out_shapes;
    out_types = memo_entry->out_types;
  } else {
    scratch.SizeForInference(n_in, n_out);
    for (size_t i = 0; i < n_in; ++i) {
      in_shapes[i] = inputs[i].shape();
      in_types[i] = inputs[i].dtype();
    }
    if (given_outputs) {
      for (size_t i = 0; i < n_out; ++i) {
        TS_CHECK(!(*outputs)[i].is_none()) << op::OpLabel(attrs) << ": out " << i << " is empty";
        scratch->out_shapes[i] = (*outputs)[i].shape();
        scratch->out_types[i] = (*outputs)[i].dtype();
      }
    }
    InferShapes(attrs, &in_shapes, &scratch->out_shapes);
    InferTypes(attrs, &in_types, &scratch->out_types);
    if (!given_outputs && !fcreate.find(op))
      memo_entry =
          memo.Store(attrs_ptr, in_shapes, in_types, scratch->out_shapes, scratch->out_types);
    out_shapes = scratch->out_shapes.data();
    out_types = scratch->out_types.data();
  }
  // What the registry says of the op on this device: from the entry. Its
  // pointers are used only until the outputs are made below; no op is
  // invoked before that, which could reuse the slot.
  static const auto& fresource_map = Op::GetAttr<op::FResourceRequest>("FResourceRequest");
  static const auto& fmutate_map = Op::GetAttr<op::FMutateInputs>("FMutateInputs");
  const bool on_gpu = ctx.is_gpu();
  op::DeviceKernel kernel;
  const op::FResourceRequest* fresource;
  const op::FMutateInputs* fmutate;
  if (memo_entry && memo_entry->kernel_on == int{on_gpu}) {
    kernel = memo_entry->kernel;
    fresource = memo_entry->fresource;
    fmutate = memo_entry->fmutate;
  } else {
    kernel = op::FindDeviceKernel(attrs, on_gpu);
    fresource = fresource_map.find(op);
    fmutate = fmutate_map.find(op);
    if (memo_entry) {
      memo_entry->kernel_on = int{on_gpu};
      memo_entry->kernel = kernel;
      memo_entry->fresource = fresource;
      memo_entry->fmutate = fmutate;
    }
  }
  if (given_outputs) {
    for (size_t i = 0; i < n_out; ++i) {
      const NDArray& o = (*outputs)[i];
      TS_CHECK(o.ctx() == ctx) << op::OpLabel(attrs) << ": out " << i << " is on "
                               << o.ctx().ToString() << ", the op runs on " << ctx.ToString();
    }
  } else {
    if (outputs->capacity() < n_out) outputs->reserve(n_out);
    for (size_t i = 0; i < n_out; ++i) outputs->emplace_back(out_shapes[i], ctx, out_types[i]);
  }

  // Compute function for the device.
  const op::FCompute* fcompute = kernel.fcompute;
  const op::FStatefulCompute* fstate = kernel.fstate;
  const op::FStatefulComputeEx* fstate_ex = kernel.fstate_ex;
  if (!kernel.found()) {
    if (on_gpu && !BuiltWithCUDA())
      TS_THROW << op->name() << " on " << ctx.ToString() << ": this build has no CUDA";
    TS_THROW << op->name() << " has no " << (on_gpu ? "GPU" : "CPU") << " implementation";
  }
  op::OpStatePtr state;
  if (fstate || fstate_ex) state = fcreate[op](attrs, ctx, in_shapes, in_types);

  // Requests: write, or what the caller asked; an output sharing memory with
  // an input is written in place only where the op allows it.
  std::vector<OpReqType>& req = scratch->req;
  req.assign(n_out, kWriteTo);
  if (!opt.req.empty()) {
    TS_CHECK(opt.req.size() == n_out) << op::OpLabel(attrs) << ": " << opt.req.size()
                                      << " write requests for " << n_out << " outputs";
    req = opt.req;
  }
  // What the kernel writes: the outputs, or a copy with temporaries in place
  // of given outputs that overlap an input (new ones cannot; made only then).
  struct Overlap {
    std::vector<NDArray> replaced;
    std::vector<std::pair<NDArray, NDArray>> copy_back;  // (temporary, output)
  };
  std::unique_ptr<Overlap> overlap;
  const std::vector<NDArray>* written = outputs;
  for (size_t o = 0; given_outputs && o < n_out; ++o) {
    for (size_t i = 0; i < n_in; ++i) {
      const NDArray& out = (*written)[o];
      if (!out.SameChunk(inputs[i])) continue;
      const bool same_view =
          out.byte_offset() == inputs[i].byte_offset() && out.shape() == inputs[i].shape();
      if (same_view && req[o] == kWriteTo && InplaceAllowed(attrs, int(i), int(o))) {
        req[o] = kWriteInplace;
      } else {
        NDArray tmp(out.shape(), ctx, out.dtype());
        if (req[o] == kAddTo) CopyFromTo(out, tmp);
        if (!overlap) overlap = std::make_unique<Overlap>();
        overlap->copy_back.emplace_back(tmp, out);  // before `out` may be replaced below
        if (written != &overlap->replaced)
          overlap->replaced = *outputs, written = &overlap->replaced;
        overlap->replaced[o] = tmp;
      }
      break;
    }
  }

  std::vector<op::Resource> resources;
  if (fresource)
    for (const auto& r : (*fresource)(attrs))
      resources.push_back(storage::ResourceManager::Get()->Request(ctx, r));

  // A tiny CPU op without resources (whose state other ops may hold) runs
  // here and now when its arrays are free, without a push's allocations,
  // or else inline on the thread that makes it ready (kAsync). Its new
  // outputs need no engine variable while nothing else has seen them.
  const bool tiny =
      !fstate && !fstate_ex && !on_gpu && resources.empty() && RunsInline(inputs, *written);
  const bool fresh_outputs = tiny && !given_outputs;
  auto add_output_vars = [&](SmallVector<VarHandle, 8>* vars) {
    for (size_t o = 0; o < n_out; ++o) vars->push_back((*written)[o].var());
  };

  SmallVector<VarHandle, 8> const_vars, mutate_vars;
  std::vector<TBlob>& in_blobs = scratch->in_blobs;
  std::vector<TBlob>& out_blobs = scratch->out_blobs;
  in_blobs.resize(n_in);
  out_blobs.resize(n_out);
  for (size_t i = 0; i < n_in; ++i) {
    in_blobs[i] = inputs[i].data();
    const_vars.push_back(inputs[i].var());
  }
  for (size_t o = 0; o < n_out; ++o) out_blobs[o] = (*written)[o].data();
  if (!fresh_outputs) add_output_vars(&mutate_vars);
  if (fmutate)
    for (uint32_t i : (*fmutate)(attrs)) {
      TS_CHECK(i < n_in) << op::OpLabel(attrs) << ": mutates input " << i << " of " << n_in;
      mutate_vars.push_back(inputs[i].var());
    }
  if (state) mutate_vars.push_back(state.var());

  const RecordState& record = ThreadRecordState();
  const bool is_train = opt.is_train || record.training;
  if (fstate_ex) {
    // Holds the arrays, not just their blobs: the compute makes aliases.
    auto run = [f = *fstate_ex, state, is_train, inputs = inputs.ToVector(), outs = *written, req,
                resources = std::move(resources)](RunContext rctx,
                                                  std::function<void(std::exception_ptr)> done) {
      op::OpContext octx{is_train, rctx, resources, std::move(done)};
      f(state, octx, inputs, req, outs);
    };
    if (kernel.is_async) {
      Engine::Get()->PushAsync(
          [run](RunContext rctx, engine::CallbackOnComplete done) {
            run(rctx, [done](std::exception_ptr e) { e ? done(std::move(e)) : done(); });
          },
          // Started by whichever thread makes it ready (at once when its
          // inputs are): it only hands its work on, and a Lua op whose
          // inputs are ready runs without a round trip through a worker.
          ctx, const_vars, mutate_vars, engine::FnProperty::kAsync, opt.priority,
          op->name().c_str());
    } else {
      Engine::Get()->PushSync([run](RunContext rctx) { run(rctx, nullptr); }, ctx, const_vars,
                              mutate_vars, engine::FnProperty::kNormal, opt.priority,
                              op->name().c_str());
    }
  } else if (fstate) {
    Engine::Get()->PushSync(
        [f = *fstate, state, is_train, in_blobs, out_blobs, req,
         resources = std::move(resources)](RunContext rctx) {
          op::OpContext octx{is_train, rctx, resources, nullptr};
          f(state, octx, in_blobs, req, out_blobs);
        },
        ctx, const_vars, mutate_vars, engine::FnProperty::kNormal, opt.priority,
        op->name().c_str());
  } else {
    const op::FCompute* f = fcompute;
    if (tiny) {
      const op::OpContext octx{is_train, RunContext{ctx, nullptr}, resources, nullptr};
      // New outputs are not among the variables the run holds, so a failure
      // cannot poison them there: it is kept and pushed as a failing op
      // that writes them (and the rest), which reports it as a kernel's.
      std::exception_ptr failed;
      auto run = [&] {
        try {
          (*f)(attrs, octx, in_blobs, req, out_blobs);
        } catch (...) {
          if (!fresh_outputs) throw;
          failed = std::current_exception();
        }
      };
      const bool ran = Engine::Get()->TryRunNow(run, const_vars, mutate_vars, op->name().c_str());
      if (fresh_outputs && (!ran || failed)) add_output_vars(&mutate_vars);
      if (ran) {
        if (failed)
          Engine::Get()->PushSync([failed](RunContext) { std::rethrow_exception(failed); }, ctx, {},
                                  mutate_vars, engine::FnProperty::kNormal, opt.priority,
                                  op->name().c_str());
        if (overlap)
          for (auto& [tmp, dst] : overlap->copy_back) CopyFromTo(tmp, dst, opt.priority);
        if (record.recording && g_record_hook) g_record_hook(attrs_ptr, inputs.ToVector(), outputs);
        return;
      }
    }
    Engine::Get()->PushSync(
        [f, attrs_ptr, is_train, in_blobs, out_blobs, req,
         resources = std::move(resources)](RunContext rctx) {
          op::OpContext octx{is_train, rctx, resources, nullptr};
          (*f)(*attrs_ptr, octx, in_blobs, req, out_blobs);
        },
        ctx, const_vars, mutate_vars,
        tiny ? engine::FnProperty::kAsync : engine::FnProperty::kNormal, opt.priority,
        op->name().c_str());
  }
  if (overlap)
    for (auto& [tmp, dst] : overlap->copy_back) CopyFromTo(tmp, dst, opt.priority);
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
