// The "Custom" op and its backward: the registry side of custom ops. See
// custom_op.h for the contract with the front end.
#include "ops/custom/custom_op.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "engine/ndarray/op_attr_ndarray.h"
#include "engine/op/infer_utils.h"
#include "engine/op/op.h"

namespace tessera::op::custom {
namespace {

std::mutex& RegistryMutex() {
  static std::mutex mu;
  return mu;
}
std::map<std::string, PropCreator>& Creators() {
  static std::map<std::string, PropCreator> m;
  return m;
}

// What a Custom (or _backward_Custom) node carries: its property, the lists
// it gave, and which out_grad / out_data arrays the backward takes.
struct CustomParams {
  std::string op_type;
  std::shared_ptr<CustomOpProp> prop;
  std::vector<std::string> args, outs, aux;
  std::vector<bool> bwd_ograd, bwd_odata;

  size_t num_bwd_ograd() const { return std::count(bwd_ograd.begin(), bwd_ograd.end(), true); }
  size_t num_bwd_odata() const { return std::count(bwd_odata.begin(), bwd_odata.end(), true); }
};
using ParamsPtr = std::shared_ptr<const CustomParams>;

const CustomParams& P(const NodeAttrs& attrs) {
  return *ParamsOf<ParamsPtr>(attrs);
}

std::string Label(const NodeAttrs& attrs) {
  const auto* p = std::any_cast<ParamsPtr>(&attrs.parsed);
  std::string s = "Custom '" + (p ? (*p)->op_type : std::string("?")) + "'";
  if (!attrs.name.empty()) s += " (node " + attrs.name + ")";
  return s;
}

void Parse(NodeAttrs* attrs) {
  auto it = attrs->dict.find("op_type");
  TS_CHECK(it != attrs->dict.end())
      << "Custom: missing parameter op_type (the name given to mx.operator.register)";
  auto p = std::make_shared<CustomParams>();
  p->op_type = it->second;
  PropCreator create;
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    auto c = Creators().find(p->op_type);
    if (c != Creators().end()) create = c->second;
  }
  TS_CHECK(create) << "Custom: op_type '" << p->op_type
                   << "' is not registered (register it with mx.operator.register)";
  ParamDict kwargs = attrs->dict;
  kwargs.erase("op_type");
  p->prop = create(kwargs);
  TS_CHECK(p->prop) << "Custom '" << p->op_type << "': the property constructor returned nothing";
  p->args = p->prop->ListArguments();
  p->outs = p->prop->ListOutputs();
  p->aux = p->prop->ListAuxiliaryStates();
  TS_CHECK(!p->outs.empty()) << "Custom '" << p->op_type << "': list_outputs is empty";

  const int n_out = int(p->outs.size()), n_in = int(p->args.size());
  std::vector<int> og(n_out), id(n_in), od(n_out);
  for (int i = 0; i < n_out; ++i) og[i] = i;
  for (int i = 0; i < n_in; ++i) id[i] = n_out + i;
  for (int i = 0; i < n_out; ++i) od[i] = n_out + n_in + i;
  p->bwd_ograd.assign(n_out, false);
  p->bwd_odata.assign(n_out, false);
  for (int d : p->prop->DeclareBackwardDependency(og, id, od)) {
    if (d >= 0 && d < n_out) {
      p->bwd_ograd[d] = true;
    } else if (d >= n_out + n_in && d < 2 * n_out + n_in) {
      p->bwd_odata[d - n_out - n_in] = true;
    } else {
      // in_data is always given (the backward needs its shapes).
      TS_CHECK(d >= n_out && d < n_out + n_in)
          << "Custom '" << p->op_type << "': declare_backward_dependency returned id " << d
          << ", not one of the ids it was given (0.." << 2 * n_out + n_in - 1 << ")";
    }
  }
  attrs->parsed = ParamsPtr(std::move(p));
}

// ---- inference ---------------------------------------------------------------

template <typename T>
void CheckCount(const NodeAttrs& attrs, const char* fn, const std::vector<T>& v, size_t n,
                const char* what) {
  TS_CHECK(v.size() == n) << Label(attrs) << ": " << fn << " returned " << v.size() << " " << what
                          << ", the op has " << n;
}

// Shapes and dtypes take one path: how the property is asked, what it
// leaves unknown, and how a value is merged (conflicts are errors).
template <typename T>
struct InferTraits;
template <>
struct InferTraits<Shape> {
  static constexpr const char* kFn = "infer_shape";
  static constexpr const char* kWhat = "shapes";
  static bool Known(const Shape& s) { return s.known(); }
  static bool Given(const Shape& s) { return s.ndim() > 0; }  // partially known counts
  static void Ask(CustomOpProp& prop, std::vector<Shape>* a, std::vector<Shape>* o,
                  std::vector<Shape>* x) {
    prop.InferShape(a, o, x);
  }
  static void Assign(const NodeAttrs& attrs, std::vector<Shape>* v, size_t i, const Shape& s,
                     const char* what) {
    AssignShape(attrs, v, i, s, what);
  }
};
template <>
struct InferTraits<DType> {
  static constexpr const char* kFn = "infer_type";
  static constexpr const char* kWhat = "types";
  static bool Known(DType t) { return t != DType::kUnknown; }
  static bool Given(DType t) { return Known(t); }
  static void Ask(CustomOpProp& prop, std::vector<DType>* a, std::vector<DType>* o,
                  std::vector<DType>* x) {
    prop.InferType(a, o, x);
  }
  static void Assign(const NodeAttrs& attrs, std::vector<DType>* v, size_t i, DType t,
                     const char* what) {
    AssignType(attrs, v, i, t, what);
  }
};

// Custom: the property fills what it can once the first argument is known.
template <typename T>
bool InferForward(const NodeAttrs& attrs, std::vector<T>* in, std::vector<T>* out) {
  using Tr = InferTraits<T>;
  const CustomParams& p = P(attrs);
  const size_t na = p.args.size();
  if (na > 0 && !Tr::Known((*in)[0])) return false;  // nothing to start from
  std::vector<T> args(in->begin(), in->begin() + na), aux(in->begin() + na, in->end());
  std::vector<T> outs = *out;
  Tr::Ask(*p.prop, &args, &outs, &aux);
  const std::string what = std::string(" ") + Tr::kWhat;
  CheckCount(attrs, Tr::kFn, args, na, ("argument" + what).c_str());
  CheckCount(attrs, Tr::kFn, outs, p.outs.size(), ("output" + what).c_str());
  CheckCount(attrs, Tr::kFn, aux, p.aux.size(), ("auxiliary" + what).c_str());
  for (size_t i = 0; i < na; ++i)
    if (Tr::Given(args[i])) Tr::Assign(attrs, in, i, args[i], "input");
  for (size_t i = 0; i < aux.size(); ++i)
    if (Tr::Given(aux[i])) Tr::Assign(attrs, in, na + i, aux[i], "auxiliary state");
  for (size_t i = 0; i < outs.size(); ++i)
    if (Tr::Given(outs[i])) Tr::Assign(attrs, out, i, outs[i], "output");
  return AllKnown(*in) && AllKnown(*out);
}

// _backward_Custom: each argument's gradient is like the argument, which
// sits after the declared out_grads among the backward's inputs.
template <typename T>
bool InferBackward(const NodeAttrs& attrs, std::vector<T>* in, std::vector<T>* out) {
  using Tr = InferTraits<T>;
  const CustomParams& p = P(attrs);
  const size_t first = p.num_bwd_ograd();
  for (size_t i = 0; i < p.args.size(); ++i) {
    if (Tr::Known((*in)[first + i])) Tr::Assign(attrs, out, i, (*in)[first + i], "gradient");
    if (Tr::Known((*out)[i])) Tr::Assign(attrs, in, first + i, (*out)[i], "input");
  }
  return AllKnown(*out);
}

// ---- compute -------------------------------------------------------------------

struct CustomState {
  std::shared_ptr<CustomOperator> op;
  ParamsPtr params;
};

OpStatePtr CreateState(const NodeAttrs& attrs, Context ctx, const std::vector<Shape>& shapes,
                       const std::vector<DType>& types, size_t first_arg) {
  const ParamsPtr& p = ParamsOf<ParamsPtr>(attrs);
  const size_t na = p->args.size();
  std::vector<Shape> s(shapes.begin() + first_arg, shapes.begin() + first_arg + na);
  std::vector<DType> t(types.begin() + first_arg, types.begin() + first_arg + na);
  auto op = p->prop->CreateOperator(ctx, s, t);
  TS_CHECK(op) << Label(attrs) << ": create_operator returned nothing";
  return OpStatePtr::Create<CustomState>(CustomState{std::move(op), p});
}

// Aliases of `arrays[begin, end)`; empty arrays stay empty.
std::vector<NDArray> Aliases(const std::vector<NDArray>& arrays, size_t begin, size_t end,
                             std::vector<NDArray>* all) {
  std::vector<NDArray> out;
  for (size_t i = begin; i < end; ++i) {
    out.push_back(arrays[i].is_none() ? NDArray() : arrays[i].Alias());
    if (!out.back().is_none()) all->push_back(out.back());
  }
  return out;
}

// Ends the op once the front end's code has returned and everything it
// pushed on the aliases has finished; the code's own error comes first.
Done EndWhenSettled(const OpContext& octx, std::vector<NDArray> aliases) {
  TS_CHECK(octx.async_on_complete) << "Custom: must run as an asynchronous op";
  return [complete = octx.async_on_complete, aliases = std::move(aliases)](std::exception_ptr e) {
    std::vector<engine::VarHandle> vars;
    for (const NDArray& a : aliases) vars.push_back(a.var());
    engine::Engine::Get()->NotifyWhenSettled(
        vars, [complete, aliases, e](std::exception_ptr settled) { complete(e ? e : settled); });
  };
}

void Forward(const OpStatePtr& state, const OpContext& octx, const std::vector<NDArray>& in,
             const std::vector<OpReqType>& req, const std::vector<NDArray>& out) {
  const CustomState& st = state.get_state<CustomState>();
  const size_t na = st.params->args.size();
  std::vector<NDArray> all;
  auto in_data = Aliases(in, 0, na, &all);
  auto aux = Aliases(in, na, in.size(), &all);
  auto out_data = Aliases(out, 0, out.size(), &all);
  Done done = EndWhenSettled(octx, all);
  st.op->Forward(octx.is_train, req, in_data, out_data, aux, std::move(done));
}

// The backward node's inputs: declared out_grads, every in_data, declared
// out_data, the aux states.
void Backward(const OpStatePtr& state, const OpContext& octx, const std::vector<NDArray>& in,
              const std::vector<OpReqType>& req, const std::vector<NDArray>& out) {
  const CustomState& st = state.get_state<CustomState>();
  const CustomParams& p = *st.params;
  const size_t n_out = p.outs.size(), na = p.args.size();
  std::vector<NDArray> og(n_out), od(n_out);
  size_t k = 0;
  for (size_t i = 0; i < n_out; ++i)
    if (p.bwd_ograd[i]) og[i] = in[k++];
  std::vector<NDArray> id(in.begin() + k, in.begin() + k + na);
  k += na;
  for (size_t i = 0; i < n_out; ++i)
    if (p.bwd_odata[i]) od[i] = in[k++];
  std::vector<NDArray> all;
  auto out_grad = Aliases(og, 0, n_out, &all);
  auto in_data = Aliases(id, 0, na, &all);
  auto out_data = Aliases(od, 0, n_out, &all);
  auto aux = Aliases(in, k, in.size(), &all);
  auto in_grad = Aliases(out, 0, out.size(), &all);
  Done done = EndWhenSettled(octx, all);
  st.op->Backward(req, out_grad, in_data, out_data, in_grad, aux, std::move(done));
}

std::vector<NodeEntry> Gradient(const NodePtr& n, const std::vector<NodeEntry>& ograds) {
  const CustomParams& p = P(n->attrs);
  const size_t na = p.args.size();
  std::vector<NodeEntry> in;
  for (size_t i = 0; i < p.outs.size(); ++i)
    if (p.bwd_ograd[i]) in.push_back(ograds[i]);
  in.insert(in.end(), n->inputs.begin(), n->inputs.begin() + na);
  for (size_t i = 0; i < p.outs.size(); ++i)
    if (p.bwd_odata[i]) in.push_back({n, uint32_t(i), 0});
  in.insert(in.end(), n->inputs.begin() + na, n->inputs.end());
  std::vector<NodeEntry> grads = MakeGradNode("_backward_Custom", n, std::move(in));
  for (size_t j = 0; j < p.aux.size(); ++j)  // auxiliary states get no gradient
    grads.push_back(MakeNode("zeros_like", n->attrs.name + "_aux" + std::to_string(j) + "_zerograd",
                             {n->inputs[na + j]}));
  return grads;
}

size_t NumBackwardInputs(const CustomParams& p) {
  return p.num_bwd_ograd() + p.args.size() + p.num_bwd_odata() + p.aux.size();
}

const char* kDescription =
    "An operator written in Lua and registered with mx.operator.register(op_type, Prop). "
    "op_type names it; every other parameter reaches the property's constructor as text. "
    "Its inputs are the property's arguments then its auxiliary states.";

[[maybe_unused]] Op& kCustom =
    Op::Register("Custom")
        .describe(kDescription)
        .set_attr_parser(Parse)
        .set_num_inputs(
            [](const NodeAttrs& a) { return uint32_t(P(a).args.size() + P(a).aux.size()); })
        .set_num_outputs([](const NodeAttrs& a) { return uint32_t(P(a).outs.size()); })
        .add_argument("data", "NDArray[]", "The property's arguments, then its auxiliary states.")
        .set_attr<FListInputNames>("FListInputNames",
                                   [](const NodeAttrs& a) {
                                     std::vector<std::string> names = P(a).args;
                                     names.insert(names.end(), P(a).aux.begin(), P(a).aux.end());
                                     return names;
                                   })
        .set_attr<FListOutputNames>("FListOutputNames",
                                    [](const NodeAttrs& a) { return P(a).outs; })
        .set_attr<FMutateInputs>("FMutateInputs",
                                 [](const NodeAttrs& a) {
                                   std::vector<uint32_t> m;
                                   for (size_t j = 0; j < P(a).aux.size(); ++j)
                                     m.push_back(uint32_t(P(a).args.size() + j));
                                   return m;
                                 })
        .set_attr<FInferShape>("FInferShape", InferForward<Shape>)
        .set_attr<FInferType>("FInferType", InferForward<DType>)
        .set_attr<FCreateOpState>(
            "FCreateOpState",
            [](const NodeAttrs& a, Context ctx, const std::vector<Shape>& s,
               const std::vector<DType>& t) { return CreateState(a, ctx, s, t, 0); })
        .set_attr<FExecType>("FExecType", [](const NodeAttrs&) { return ExecType::kAsync; })
        .set_attr<FStatefulComputeEx>(kFStatefulComputeExCPU, Forward)
        .set_attr<FStatefulComputeEx>(kFStatefulComputeExGPU, Forward)
        .set_attr<FGradient>("FGradient", Gradient);

[[maybe_unused]] Op& kBackwardCustom =
    Op::Register("_backward_Custom")
        .describe("The gradient of Custom.")
        .set_attr_parser(Parse)
        .set_num_inputs([](const NodeAttrs& a) { return uint32_t(NumBackwardInputs(P(a))); })
        .set_num_outputs([](const NodeAttrs& a) { return uint32_t(P(a).args.size()); })
        .set_attr<TIsBackward>("TIsBackward", true)
        .set_attr<FInferShape>("FInferShape", InferBackward<Shape>)
        .set_attr<FInferType>("FInferType", InferBackward<DType>)
        .set_attr<FMutateInputs>("FMutateInputs",
                                 [](const NodeAttrs& a) {
                                   std::vector<uint32_t> m;
                                   const size_t first = NumBackwardInputs(P(a)) - P(a).aux.size();
                                   for (size_t j = 0; j < P(a).aux.size(); ++j)
                                     m.push_back(uint32_t(first + j));
                                   return m;
                                 })
        .set_attr<FCreateOpState>("FCreateOpState",
                                  [](const NodeAttrs& a, Context ctx, const std::vector<Shape>& s,
                                     const std::vector<DType>& t) {
                                    return CreateState(a, ctx, s, t, P(a).num_bwd_ograd());
                                  })
        .set_attr<FExecType>("FExecType", [](const NodeAttrs&) { return ExecType::kAsync; })
        .set_attr<FStatefulComputeEx>(kFStatefulComputeExCPU, Backward)
        .set_attr<FStatefulComputeEx>(kFStatefulComputeExGPU, Backward);

}  // namespace

bool Register(const std::string& op_type, PropCreator creator) {
  TS_CHECK(!op_type.empty()) << "mx.operator.register: the op_type is empty";
  std::lock_guard<std::mutex> lock(RegistryMutex());
  return !Creators().insert_or_assign(op_type, std::move(creator)).second;
}

bool Unregister(const std::string& op_type) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  return Creators().erase(op_type) > 0;
}

std::vector<std::string> ListRegistered() {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  std::vector<std::string> names;
  for (const auto& [name, creator] : Creators()) names.push_back(name);
  return names;
}

}  // namespace tessera::op::custom
