#include "engine/legacy_op/simple_op.h"

#include <map>
#include <memory>
#include <mutex>

#include "engine/op/deferred_init.h"
#include "engine/op/infer_utils.h"

namespace tessera::op {
namespace {

struct SimpleOpScalarParam : Params<SimpleOpScalarParam> {
  double scalar = 0;
  static void Declare(ParamDecl<SimpleOpScalarParam>& d) {
    d.field("scalar", &SimpleOpScalarParam::scalar).describe("Scalar argument of the operator.");
  }
};

struct EntryRegistry {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<SimpleOpRegEntry>, std::less<>> entries;
  static EntryRegistry& Get() {
    RunDeferredInit();  // the operator libraries' SimpleOps register on the first use
    static EntryRegistry* r = new EntryRegistry();  // outlives every op, as the op registry does
    return *r;
  }
};

int DeviceIndex(DeviceType dev, const std::string& op) {
  TS_CHECK(dev == DeviceType::kCPU || dev == DeviceType::kGPU)
      << op << ": SimpleOp functions are registered for cpu::kDevice or gpu::kDevice";
  return dev == DeviceType::kGPU ? 1 : 0;
}

const char* ComputeKey(DeviceType dev) {
  return dev == DeviceType::kGPU ? kFComputeGPU : kFComputeCPU;
}

const char* InplaceName(SimpleOpInplaceOption o) {
  switch (o) {
    case kNoInplace:
      return "kNoInplace";
    case kInplaceInOut:
      return "kInplaceInOut";
    case kInplaceOutIn:
      return "kInplaceOutIn";
    case kInplaceLhsOut:
      return "kInplaceLhsOut";
    case kInplaceOutLhs:
      return "kInplaceOutLhs";
  }
  return "?";
}

template <typename Arg>
Arg Wrap(const TBlob& blob) {
  Arg a;
  a.data = blob;
  return a;
}

}  // namespace

SimpleOpRegEntry& SimpleOpRegEntry::Register(const std::string& name) {
  // Under a RegistrationGuard this refuses a name that was taken before it,
  // which an existing entry's name is: a plugin must not replace a built-in
  // SimpleOp's functions.
  Op::Register(name);
  EntryRegistry& r = EntryRegistry::Get();
  std::lock_guard lock(r.mu);
  auto it = r.entries.find(name);
  if (it != r.entries.end()) return *it->second;
  auto* e = new SimpleOpRegEntry(name);
  r.entries.emplace(name, std::unique_ptr<SimpleOpRegEntry>(e));
  return *e;
}

const SimpleOpRegEntry* SimpleOpRegEntry::Find(std::string_view name) {
  EntryRegistry& r = EntryRegistry::Get();
  std::lock_guard lock(r.mu);
  auto it = r.entries.find(name);
  return it == r.entries.end() ? nullptr : it->second.get();
}

// The attributes that read the entry at call time are set once here, so the
// setters may come in any order and from several files.
SimpleOpRegEntry::SimpleOpRegEntry(std::string name)
    : name_(std::move(name)), forward_(&Op::Register(name_)) {
  const SimpleOpRegEntry* e = this;
  forward_->set_num_inputs([e](const NodeAttrs&) { return e->is_binary() ? 2u : 1u; })
      .set_num_outputs(1)
      .set_attr_parser([e](NodeAttrs* attrs) { e->Parse(attrs); })
      .set_attr<FListInputNames>("FListInputNames",
                                 [e](const NodeAttrs&) {
                                   return e->is_binary() ? std::vector<std::string>{"lhs", "rhs"}
                                                         : std::vector<std::string>{"data"};
                                 })
      .set_attr<FInferShape>(
          "FInferShape", [e](const NodeAttrs& attrs, std::vector<Shape>* in,
                             std::vector<Shape>* out) { return e->ForwardShape(attrs, in, out); })
      .set_attr<FInferType>("FInferType", SameTypeAll)
      .set_attr<FInplaceOption>("FInplaceOption",
                                [e](const NodeAttrs&) {
                                  return e->forward_inplace_ == kNoInplace
                                             ? std::vector<std::pair<int, int>>{}
                                             : std::vector<std::pair<int, int>>{{0, 0}};
                                })
      .set_attr<FResourceRequest>("FResourceRequest",
                                  [e](const NodeAttrs&) { return e->resources_; });
}

void SimpleOpRegEntry::SetArity(Arity arity, const char* what) {
  TS_CHECK(arity_ == Arity::kUnknown || arity_ == arity)
      << name_ << ": a " << (arity == Arity::kUnary ? "unary" : "binary") << " " << what
      << " on an op registered as " << (arity_ == Arity::kUnary ? "unary" : "binary");
  arity_ = arity;
  if (!added_arguments_) {
    added_arguments_ = true;
    if (arity == Arity::kUnary) {
      forward_->add_argument("data", "NDArray", "Input array.");
    } else {
      forward_->add_argument("lhs", "NDArray", "Left operand.");
      forward_->add_argument("rhs", "NDArray", "Right operand.");
    }
  }
}

void SimpleOpRegEntry::SetForwardInplace(SimpleOpInplaceOption inplace) {
  const SimpleOpInplaceOption allowed = is_binary() ? kInplaceLhsOut : kInplaceInOut;
  TS_CHECK(inplace == kNoInplace || inplace == allowed)
      << name_ << ": set_function takes kNoInplace or " << InplaceName(allowed) << ", not "
      << InplaceName(inplace);
  forward_inplace_ = inplace;
}

SimpleOpRegEntry& SimpleOpRegEntry::set_function(DeviceType dev, UnaryFunction fn,
                                                 SimpleOpInplaceOption inplace) {
  const int d = DeviceIndex(dev, name_);
  SetArity(Arity::kUnary, "function");
  SetForwardInplace(inplace);
  unary_[d] = fn;
  AddForwardCompute(dev);
  return *this;
}

SimpleOpRegEntry& SimpleOpRegEntry::set_function(DeviceType dev, BinaryFunction fn,
                                                 SimpleOpInplaceOption inplace) {
  const int d = DeviceIndex(dev, name_);
  SetArity(Arity::kBinary, "function");
  SetForwardInplace(inplace);
  binary_[d] = fn;
  AddForwardCompute(dev);
  return *this;
}

void SimpleOpRegEntry::AddForwardCompute(DeviceType dev) {
  const SimpleOpRegEntry* e = this;
  const int d = DeviceIndex(dev, name_);
  forward_->set_attr<FCompute>(
      ComputeKey(dev),
      [e, d](const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
             const std::vector<OpReqType>& req,
             const std::vector<TBlob>& out) { e->RunForward(d, attrs, ctx, in, req, out); });
}

SimpleOpRegEntry& SimpleOpRegEntry::set_gradient(DeviceType dev, UnaryGradFunctionT0 fn,
                                                 SimpleOpInplaceOption inplace) {
  AddGradient(dev, GradKind::kUnaryT0, inplace);
  grad_[DeviceIndex(dev, name_)].unary_t0 = fn;
  return *this;
}
SimpleOpRegEntry& SimpleOpRegEntry::set_gradient(DeviceType dev, UnaryGradFunctionT1 fn,
                                                 SimpleOpInplaceOption inplace) {
  AddGradient(dev, GradKind::kUnaryT1, inplace);
  grad_[DeviceIndex(dev, name_)].unary_t1 = fn;
  return *this;
}
SimpleOpRegEntry& SimpleOpRegEntry::set_gradient(DeviceType dev, UnaryGradFunctionT2 fn,
                                                 SimpleOpInplaceOption inplace) {
  AddGradient(dev, GradKind::kUnaryT2, inplace);
  grad_[DeviceIndex(dev, name_)].unary_t2 = fn;
  return *this;
}
SimpleOpRegEntry& SimpleOpRegEntry::set_gradient(DeviceType dev, BinaryGradFunctionT0 fn,
                                                 SimpleOpInplaceOption inplace) {
  AddGradient(dev, GradKind::kBinaryT0, inplace);
  grad_[DeviceIndex(dev, name_)].binary_t0 = fn;
  return *this;
}
SimpleOpRegEntry& SimpleOpRegEntry::set_gradient(DeviceType dev, BinaryGradFunctionT1 fn,
                                                 SimpleOpInplaceOption inplace) {
  AddGradient(dev, GradKind::kBinaryT1, inplace);
  grad_[DeviceIndex(dev, name_)].binary_t1 = fn;
  return *this;
}

void SimpleOpRegEntry::AddGradient(DeviceType dev, GradKind kind, SimpleOpInplaceOption inplace) {
  const int d = DeviceIndex(dev, name_);
  const bool binary = kind == GradKind::kBinaryT0 || kind == GradKind::kBinaryT1;
  SetArity(binary ? Arity::kBinary : Arity::kUnary, "gradient");
  TS_CHECK(grad_kind_ == GradKind::kNone || grad_kind_ == kind)
      << name_ << ": the gradient functions of every device must take the same arguments";
  const SimpleOpInplaceOption allowed = binary ? kInplaceOutLhs : kInplaceOutIn;
  TS_CHECK(inplace == kNoInplace || inplace == allowed)
      << name_ << ": set_gradient takes kNoInplace or " << InplaceName(allowed) << ", not "
      << InplaceName(inplace);
  grad_kind_ = kind;
  grad_inplace_ = inplace;
  RegisterBackwardOp();
  const SimpleOpRegEntry* e = this;
  backward_->set_attr<FCompute>(
      ComputeKey(dev),
      [e, d](const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
             const std::vector<OpReqType>& req,
             const std::vector<TBlob>& out) { e->RunBackward(d, attrs, ctx, in, req, out); });
}

void SimpleOpRegEntry::RegisterBackwardOp() {
  if (backward_) return;
  const SimpleOpRegEntry* e = this;
  backward_ = &Op::Register("_backward_" + name_);
  backward_->describe("Gradient of " + name_ + ".")
      .set_num_inputs([e](const NodeAttrs&) { return e->NumBackwardInputs(); })
      .set_num_outputs([e](const NodeAttrs&) { return e->is_binary() ? 2u : 1u; })
      .set_attr_parser([e](NodeAttrs* attrs) { e->Parse(attrs); })
      .set_attr<TIsBackward>("TIsBackward", true)
      .set_attr<FInferShape>(
          "FInferShape", [e](const NodeAttrs& attrs, std::vector<Shape>* in,
                             std::vector<Shape>* out) { return e->BackwardShape(attrs, in, out); })
      .set_attr<FInferType>("FInferType", SameTypeAll)
      .set_attr<FInplaceOption>("FInplaceOption",
                                [e](const NodeAttrs&) {
                                  return e->grad_inplace_ == kNoInplace
                                             ? std::vector<std::pair<int, int>>{}
                                             : std::vector<std::pair<int, int>>{{0, 0}};
                                })
      .set_attr<FResourceRequest>("FResourceRequest",
                                  [e](const NodeAttrs&) { return e->resources_; });
  forward_->set_attr<FGradient>("FGradient",
                                [e](const NodePtr& n, const std::vector<NodeEntry>& ograds) {
                                  return e->MakeGradient(n, ograds);
                                });
}

uint32_t SimpleOpRegEntry::NumBackwardInputs() const {
  switch (grad_kind_) {
    case GradKind::kUnaryT1:
    case GradKind::kUnaryT2:
      return 2;
    case GradKind::kBinaryT1:
      return 3;
    default:
      return 1;
  }
}

SimpleOpRegEntry& SimpleOpRegEntry::set_shape_function(UnaryShapeFunction fn) {
  SetArity(Arity::kUnary, "shape function");
  unary_shape_ = fn;
  return *this;
}
SimpleOpRegEntry& SimpleOpRegEntry::set_shape_function(BinaryShapeFunction fn) {
  SetArity(Arity::kBinary, "shape function");
  binary_shape_ = fn;
  return *this;
}

SimpleOpRegEntry& SimpleOpRegEntry::set_enable_scalar(bool enable) {
  TS_CHECK(!(enable && enable_kwargs_))
      << name_ << ": scalar and kwargs cannot both be enabled (pass the scalar as a kwarg)";
  enable_scalar_ = enable;
  if (enable && !added_scalar_doc_) {
    added_scalar_doc_ = true;
    forward_->add_arguments(SimpleOpScalarParam::Fields());
  }
  return *this;
}

SimpleOpRegEntry& SimpleOpRegEntry::set_enable_kwargs(bool enable) {
  TS_CHECK(!(enable && enable_scalar_))
      << name_ << ": scalar and kwargs cannot both be enabled (pass the scalar as a kwarg)";
  enable_kwargs_ = enable;
  return *this;
}

SimpleOpRegEntry& SimpleOpRegEntry::set_resource_request(ResourceRequest req) {
  return set_resource_request(std::vector<ResourceRequest>{req});
}
SimpleOpRegEntry& SimpleOpRegEntry::set_resource_request(const std::vector<ResourceRequest>& reqs) {
  resources_ = reqs;
  return *this;
}

SimpleOpRegEntry& SimpleOpRegEntry::describe(const std::string& text) {
  forward_->describe(text);
  return *this;
}

// ---- Parameters.

void SimpleOpRegEntry::Parse(NodeAttrs* attrs) const {
  EnvArguments env;
  const std::string& op = attrs->op->name();
  if (enable_scalar_) {
    SimpleOpScalarParam p;
    p.Init(attrs->dict, op);
    env.scalar = p.scalar;
  } else {
    for (const auto& [key, value] : attrs->dict) {
      if (key.starts_with("__")) continue;  // symbol attributes, not parameters
      TS_CHECK(enable_kwargs_) << op << ": unknown parameter '" << key
                               << "' (it takes no parameters)";
      env.kwargs.emplace_back(key, value);
    }
  }
  attrs->parsed = std::move(env);
}

EnvArguments SimpleOpRegEntry::MakeEnv(const NodeAttrs& attrs,
                                       const std::vector<Resource>& resources) const {
  EnvArguments env = ParamsOf<EnvArguments>(attrs);
  env.resource = resources;
  return env;
}

// ---- Shapes.

bool SimpleOpRegEntry::ForwardShape(const NodeAttrs& attrs, std::vector<Shape>* in,
                                    std::vector<Shape>* out) const {
  if (!unary_shape_ && !binary_shape_) return SameShapeAll(attrs, in, out);
  for (const Shape& s : *in)
    if (!s.known()) return false;  // a shape function needs every input shape
  const EnvArguments env = MakeEnv(attrs);
  const Shape result =
      binary_shape_ ? binary_shape_((*in)[0], (*in)[1], env) : unary_shape_((*in)[0], env);
  AssignShape(attrs, out, 0, result, "output");
  return (*out)[0].known();
}

// The gradient of input i has input i's shape. Where the backward gets the
// inputs (T2, binary T1) that is exact; without a shape function every array
// has one shape; otherwise (T0/T1 with a shape function) only the graph,
// which knows the forward node, can say, and this returns false.
bool SimpleOpRegEntry::BackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in,
                                     std::vector<Shape>* out) const {
  const bool has_shape_fn = unary_shape_ || binary_shape_;
  if (grad_kind_ == GradKind::kUnaryT2 || grad_kind_ == GradKind::kBinaryT1) {
    for (size_t i = 0; i < out->size(); ++i) {
      AssignShape(attrs, out, i, (*in)[1 + i], "output");
      AssignShape(attrs, in, 1 + i, (*out)[i], "input");
    }
    if (has_shape_fn) {
      // out_grad has the forward output's shape.
      std::vector<Shape> fwd_in(in->begin() + 1, in->end()), fwd_out(1);
      if (ForwardShape(attrs, &fwd_in, &fwd_out)) AssignShape(attrs, in, 0, fwd_out[0], "input");
      return AllKnown(*out);
    }
  }
  if (has_shape_fn) return AllKnown(*out);
  return SameShapeAll(attrs, in, out);
}

// ---- Compute.

void SimpleOpRegEntry::RunForward(int dev, const NodeAttrs& attrs, const OpContext& ctx,
                                  const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                                  const std::vector<TBlob>& out) const {
  if (req[0] == kNullOp) return;
  const EnvArguments env = MakeEnv(attrs, ctx.requested);
  TBlob ret = out[0];
  if (is_binary()) {
    TS_CHECK(binary_[dev]) << name_ << " has no function for this device";
    binary_[dev](in[0], in[1], env, &ret, req[0], ctx.run_ctx);
  } else {
    TS_CHECK(unary_[dev]) << name_ << " has no function for this device";
    unary_[dev](in[0], env, &ret, req[0], ctx.run_ctx);
  }
}

void SimpleOpRegEntry::RunBackward(int dev, const NodeAttrs& attrs, const OpContext& ctx,
                                   const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                                   const std::vector<TBlob>& out) const {
  bool all_null = true;
  for (OpReqType r : req) all_null = all_null && r == kNullOp;
  if (all_null) return;
  const EnvArguments env = MakeEnv(attrs, ctx.requested);
  const GradFunctions& g = grad_[dev];
  const auto ograd = Wrap<OutputGrad>(in[0]);
  TBlob grad0 = out[0];
  switch (grad_kind_) {
    case GradKind::kUnaryT0:
      TS_CHECK(g.unary_t0) << "_backward_" << name_ << " has no function for this device";
      g.unary_t0(ograd, env, &grad0, req[0], ctx.run_ctx);
      break;
    case GradKind::kUnaryT1:
      TS_CHECK(g.unary_t1) << "_backward_" << name_ << " has no function for this device";
      g.unary_t1(ograd, Wrap<OutputValue>(in[1]), env, &grad0, req[0], ctx.run_ctx);
      break;
    case GradKind::kUnaryT2:
      TS_CHECK(g.unary_t2) << "_backward_" << name_ << " has no function for this device";
      g.unary_t2(ograd, Wrap<Input0>(in[1]), env, &grad0, req[0], ctx.run_ctx);
      break;
    case GradKind::kBinaryT0: {
      TS_CHECK(g.binary_t0) << "_backward_" << name_ << " has no function for this device";
      TBlob grad1 = out[1];
      g.binary_t0(ograd, env, &grad0, &grad1, req[0], req[1], ctx.run_ctx);
      break;
    }
    case GradKind::kBinaryT1: {
      TS_CHECK(g.binary_t1) << "_backward_" << name_ << " has no function for this device";
      TBlob grad1 = out[1];
      g.binary_t1(ograd, Wrap<Input0>(in[1]), Wrap<Input1>(in[2]), env, &grad0, &grad1, req[0],
                  req[1], ctx.run_ctx);
      break;
    }
    case GradKind::kNone:
      TS_THROW << name_ << " has no gradient";
  }
}

// The backward node reads out_grad and, by gradient type, the forward output
// (T1) or the forward inputs (T2, binary T1); nothing else stays alive for it.
std::vector<NodeEntry> SimpleOpRegEntry::MakeGradient(const NodePtr& n,
                                                      const std::vector<NodeEntry>& ograds) const {
  std::vector<NodeEntry> in{ograds.at(0)};
  switch (grad_kind_) {
    case GradKind::kUnaryT1:
      in.push_back({n, 0, 0});
      break;
    case GradKind::kUnaryT2:
      in.push_back(n->inputs.at(0));
      break;
    case GradKind::kBinaryT1:
      in.push_back(n->inputs.at(0));
      in.push_back(n->inputs.at(1));
      break;
    default:
      break;
  }
  return MakeGradNode("_backward_" + name_, n, std::move(in));
}

}  // namespace tessera::op
