#include "engine/ndarray/op_call.h"

#include "engine/ndarray/check_numerics.h"
#include "engine/op/infer_utils.h"

namespace tessera::opcall {

using op::Op;

OpOnDevice LookUpOp(const NodeAttrs& attrs, bool on_gpu) {
  static const auto& fcreate = Op::GetAttr<op::FCreateOpState>("FCreateOpState");
  static const auto& fresource = Op::GetAttr<op::FResourceRequest>("FResourceRequest");
  static const auto& fmutate = Op::GetAttr<op::FMutateInputs>("FMutateInputs");
  OpOnDevice info;
  info.kernel = op::FindDeviceKernel(attrs, on_gpu);
  info.fcreate = fcreate.find(attrs.op);
  info.fresource = fresource.find(attrs.op);
  info.fmutate = fmutate.find(attrs.op);
  return info;
}

void CheckKernel(const OpOnDevice& info, const NodeAttrs& attrs, Context ctx,
                 std::string_view where) {
  if (info.kernel.found()) return;
  if (ctx.is_gpu() && !BuiltWithCUDA())
    TS_THROW << where << op::OpLabel(attrs) << " on " << ctx.ToString()
             << ": this build has no CUDA";
  TS_THROW << where << op::OpLabel(attrs) << " has no " << (ctx.is_gpu() ? "GPU" : "CPU")
           << " implementation";
}

op::OpStatePtr CreateState(const OpOnDevice& info, const NodeAttrs& attrs, Context ctx,
                           const std::vector<Shape>& in_shapes, const std::vector<DType>& in_types,
                           const op::OpStatePtr& borrowed, std::string_view where) {
  if (!info.stateful()) return {};
  op::OpStatePtr state = info.fcreate ? (*info.fcreate)(attrs, ctx, in_shapes, in_types) : borrowed;
  TS_CHECK(state) << where << op::OpLabel(attrs)
                  << " is stateful but has no state (FCreateOpState)";
  return state;
}

void RequestResources(const OpOnDevice& info, const NodeAttrs& attrs, Context ctx,
                      std::vector<op::Resource>* out, std::vector<size_t>* random_slots) {
  if (!info.fresource) return;
  for (const op::ResourceRequest& r : (*info.fresource)(attrs)) {
    if (random_slots && r.type == op::ResourceRequest::kRandom)
      random_slots->push_back(out->size());
    out->push_back(resource::ResourceManager::Get()->Request(ctx, r));
  }
}

void ThrowBadMutateIndex(const NodeAttrs& attrs, uint32_t i, size_t n_in) {
  TS_THROW << op::OpLabel(attrs) << ": mutates input " << i << " of " << n_in;
}

namespace {

void Dispatch(const KernelCall& call, const op::OpContext& octx) {
  const op::DeviceKernel& k = call.kernel;
  TS_DCHECK(k.found());
  if (k.fstate_ex) {
    (*k.fstate_ex)(call.state, octx, call.in_arrays, call.req, call.out_arrays);
  } else if (k.fstate) {
    (*k.fstate)(call.state, octx, call.in, call.req, call.out);
  } else {
    (*k.fcompute)(*call.attrs, octx, call.in, call.req, call.out);
  }
}

// With check_numerics on: the outputs checked once the kernel is done (an
// async kernel's when it calls back; `call` lives until then, held by the
// pushed op or the executor).
[[gnu::noinline]] void DispatchChecked(const KernelCall& call, const op::OpContext& octx) {
  if (!octx.async_on_complete) {
    Dispatch(call, octx);
    CheckOutputs(call, octx.run_ctx.omp_threads);
    return;
  }
  op::OpContext checked = octx;
  checked.async_on_complete = [&call, done = octx.async_on_complete](std::exception_ptr e) {
    if (!e) {
      try {
        CheckOutputs(call);  // on whatever thread ends the op: one thread
      } catch (...) {
        e = std::current_exception();
      }
    }
    done(std::move(e));
  };
  Dispatch(call, checked);
}

}  // namespace

void RunKernel(const KernelCall& call, const op::OpContext& octx) {
  if (CheckNumericsOn()) [[unlikely]] {
    DispatchChecked(call, octx);
    return;
  }
  Dispatch(call, octx);
}

}  // namespace tessera::opcall
