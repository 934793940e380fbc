#include "engine/legacy_op/operator_property.h"

#include <algorithm>
#include <type_traits>

#include "engine/op/infer_utils.h"

namespace tessera::op {

// ---- Defaults of the interface.

void Operator::Backward(const OpContext&, const std::vector<TBlob>&, const std::vector<TBlob>&,
                        const std::vector<TBlob>&, const std::vector<OpReqType>&,
                        const std::vector<TBlob>&, const std::vector<TBlob>&) {
  TS_THROW << "this operator has no backward";
}

bool OperatorProperty::InferType(std::vector<DType>* in_type, std::vector<DType>* out_type,
                                 std::vector<DType>* aux_type) const {
  DType common = DType::kUnknown;
  for (const auto* v : {in_type, out_type, aux_type}) {
    for (size_t i = 0; i < v->size(); ++i) {
      const DType t = (*v)[i];
      if (t == DType::kUnknown) continue;
      TS_CHECK(common == DType::kUnknown || common == t)
          << TypeString() << ": "
          << (v == in_type    ? "argument "
              : v == out_type ? "output "
                              : "aux state ")
          << i << " has dtype " << DTypeName(t) << " but an earlier one is " << DTypeName(common);
      common = t;
    }
  }
  for (auto* v : {in_type, out_type, aux_type})
    for (DType& t : *v)
      if (t == DType::kUnknown) t = common;
  return common != DType::kUnknown;
}

Operator* OperatorProperty::CreateOperatorEx(Context ctx, std::vector<Shape>*,
                                             std::vector<DType>*) const {
  return CreateOperator(ctx);
}

std::vector<ResourceRequest> OperatorProperty::ForwardResource(const std::vector<Shape>&) const {
  return {};
}
std::vector<ResourceRequest> OperatorProperty::BackwardResource(const std::vector<Shape>&) const {
  return {};
}

std::vector<int> OperatorProperty::DeclareBackwardDependency(
    const std::vector<int>& out_grad, const std::vector<int>& in_data,
    const std::vector<int>& out_data) const {
  std::vector<int> deps = out_grad;
  deps.insert(deps.end(), in_data.begin(), in_data.end());
  deps.insert(deps.end(), out_data.begin(), out_data.end());
  return deps;
}

std::vector<std::pair<int, void*>> OperatorProperty::ForwardInplaceOption(
    const std::vector<int>&, const std::vector<void*>&) const {
  return {};
}
std::vector<std::pair<int, void*>> OperatorProperty::BackwardInplaceOption(
    const std::vector<int>&, const std::vector<int>&, const std::vector<int>&,
    const std::vector<void*>&) const {
  return {};
}

// ---- The adapter.

namespace {

// What one parsed node knows: the property (immutable after Init, so node
// copies share it) and the lists derived from it. Ids of the arrays in
// DeclareBackwardDependency: out_grad k -> k, in_data j -> n_vis + j,
// out_data k -> n_vis + n_args + k.
struct PropertyNode {
  std::shared_ptr<const OperatorProperty> prop;
  uint32_t n_args = 0, n_aux = 0, n_out = 0, n_vis = 0;
  std::vector<int> deps;  // the backward op's inputs, before the aux states

  enum Kind { kOutGrad, kInData, kOutData };
  Kind KindOf(int id) const {
    if (id < int(n_vis)) return kOutGrad;
    return id < int(n_vis + n_args) ? kInData : kOutData;
  }
  uint32_t IndexOf(int id) const {
    switch (KindOf(id)) {
      case kOutGrad:
        return uint32_t(id);
      case kInData:
        return uint32_t(id) - n_vis;
      default:
        return uint32_t(id) - n_vis - n_args;
    }
  }
  std::vector<int> Ids(Kind kind) const {
    const uint32_t n = kind == kOutGrad ? n_vis : kind == kInData ? n_args : n_out;
    const int base = kind == kOutGrad ? 0 : kind == kInData ? int(n_vis) : int(n_vis + n_args);
    std::vector<int> ids(n);
    for (uint32_t i = 0; i < n; ++i) ids[i] = base + int(i);
    return ids;
  }
};

const PropertyNode& NodeOf(const NodeAttrs& attrs) {
  return ParamsOf<PropertyNode>(attrs);
}

void ParseProperty(const std::function<std::unique_ptr<OperatorProperty>()>& factory,
                   NodeAttrs* attrs) {
  std::unique_ptr<OperatorProperty> prop = factory();
  std::vector<std::pair<std::string, std::string>> kwargs;
  for (const auto& [key, value] : attrs->dict)
    if (!key.starts_with("__")) kwargs.emplace_back(key, value);  // "__...__" belong to symbols
  prop->Init(kwargs);
  PropertyNode node;
  node.n_args = uint32_t(prop->ListArguments().size());
  node.n_aux = uint32_t(prop->ListAuxiliaryStates().size());
  node.n_out = uint32_t(prop->NumOutputs());
  node.n_vis = uint32_t(prop->NumVisibleOutputs());
  TS_CHECK(node.n_vis <= node.n_out) << prop->TypeString() << ": more visible outputs ("
                                     << node.n_vis << ") than outputs (" << node.n_out << ")";
  node.prop = std::move(prop);
  node.deps = node.prop->DeclareBackwardDependency(node.Ids(PropertyNode::kOutGrad),
                                                   node.Ids(PropertyNode::kInData),
                                                   node.Ids(PropertyNode::kOutData));
  for (int id : node.deps)
    TS_CHECK(id >= 0 && id < int(node.n_vis + node.n_args + node.n_out))
        << node.prop->TypeString() << ": DeclareBackwardDependency returned an unknown id " << id;
  attrs->parsed = std::move(node);
}

template <typename T>
void CheckSize(const NodeAttrs& attrs, const std::vector<T>& v, size_t n, const char* what) {
  TS_CHECK(v.size() == n) << OpLabel(attrs) << ": the property's inference left " << v.size() << " "
                          << what << ", expected " << n;
}

// Calls the property's InferShape or InferType on the forward arrays, then
// merges its answer back (conflicts with known values are errors naming the
// op). `merge(vec, i, value, what)` is AssignShape or AssignType.
template <typename T, typename Infer, typename Merge>
bool InferThroughProperty(const NodeAttrs& attrs, std::vector<T>* args, std::vector<T>* outs,
                          std::vector<T>* aux, Infer infer, Merge merge) {
  const PropertyNode& node = NodeOf(attrs);
  std::vector<T> a = *args, o = *outs, x = *aux;
  const bool ok = infer(*node.prop, &a, &o, &x);
  CheckSize(attrs, a, node.n_args, "arguments");
  CheckSize(attrs, o, node.n_out, "outputs");
  CheckSize(attrs, x, node.n_aux, "aux states");
  for (size_t i = 0; i < a.size(); ++i) merge(args, i, a[i], "argument");
  for (size_t i = 0; i < o.size(); ++i) merge(outs, i, o[i], "output");
  for (size_t i = 0; i < x.size(); ++i) merge(aux, i, x[i], "aux state");
  return ok;
}

template <typename T>
T Unknown() {
  if constexpr (std::is_same_v<T, DType>)
    return DType::kUnknown;
  else
    return T();
}

// The forward arrays' attributes (shapes or dtypes) as far as the backward
// node's inputs and outputs tell, completed by the property's inference.
// Writes back into the backward's inputs and outputs (in_grad j = argument j).
template <typename T, typename Infer, typename Merge>
bool BackwardInfer(const NodeAttrs& attrs, std::vector<T>* in, std::vector<T>* out, Infer infer,
                   Merge merge, std::vector<T>* fwd_args_out = nullptr) {
  const PropertyNode& node = NodeOf(attrs);
  const T unknown = Unknown<T>();
  std::vector<T> args(node.n_args, unknown), outs(node.n_out, unknown), aux(node.n_aux, unknown);
  auto slot = [&](int id) -> T& {
    const uint32_t i = node.IndexOf(id);
    return node.KindOf(id) == PropertyNode::kInData ? args[i] : outs[i];  // out_grad: out's
  };
  for (size_t p = 0; p < node.deps.size(); ++p) merge(&slot(node.deps[p]), (*in)[p]);
  for (uint32_t a = 0; a < node.n_aux; ++a) aux[a] = (*in)[node.deps.size() + a];
  for (uint32_t j = 0; j < node.n_args; ++j) merge(&args[j], (*out)[j]);
  infer(*node.prop, &args, &outs, &aux);
  CheckSize(attrs, args, node.n_args, "arguments");
  CheckSize(attrs, outs, node.n_out, "outputs");
  CheckSize(attrs, aux, node.n_aux, "aux states");
  for (size_t p = 0; p < node.deps.size(); ++p) (*in)[p] = slot(node.deps[p]);
  for (uint32_t j = 0; j < node.n_args; ++j) (*out)[j] = args[j];
  if (fwd_args_out) *fwd_args_out = args;
  return true;
}

bool InferShapeCall(const OperatorProperty& p, std::vector<Shape>* a, std::vector<Shape>* o,
                    std::vector<Shape>* x) {
  return p.InferShape(a, o, x);
}
bool InferTypeCall(const OperatorProperty& p, std::vector<DType>* a, std::vector<DType>* o,
                   std::vector<DType>* x) {
  return p.InferType(a, o, x);
}

// The state of one stateful call: the Operator and the node it came from.
struct PropertyOpState {
  std::unique_ptr<Operator> op;
  PropertyNode node;
};

OpStatePtr CreateState(const NodeAttrs& attrs, Context ctx, std::vector<Shape> args,
                       std::vector<DType> types) {
  const PropertyNode& node = NodeOf(attrs);
  std::unique_ptr<Operator> op(node.prop->CreateOperatorEx(ctx, &args, &types));
  TS_CHECK(op) << OpLabel(attrs) << ": no implementation on " << ctx.ToString();
  return OpStatePtr::Create<PropertyOpState>(PropertyOpState{std::move(op), node});
}

void ForwardCompute(const OpStatePtr& state, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  auto& s = state.get_state<PropertyOpState>();
  const std::vector<TBlob> args(in.begin(), in.begin() + s.node.n_args);
  const std::vector<TBlob> aux(in.begin() + s.node.n_args, in.end());
  s.op->Forward(ctx, args, req, out, aux);
}

void BackwardCompute(const OpStatePtr& state, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  auto& s = state.get_state<PropertyOpState>();
  const PropertyNode& node = s.node;
  std::vector<TBlob> out_grad(node.n_vis), in_data(node.n_args), out_data(node.n_out);
  for (size_t p = 0; p < node.deps.size(); ++p) {
    const int id = node.deps[p];
    const uint32_t i = node.IndexOf(id);
    switch (node.KindOf(id)) {
      case PropertyNode::kOutGrad:
        out_grad[i] = in[p];
        break;
      case PropertyNode::kInData:
        in_data[i] = in[p];
        break;
      case PropertyNode::kOutData:
        out_data[i] = in[p];
        break;
    }
  }
  const std::vector<TBlob> aux(in.begin() + node.deps.size(), in.end());
  s.op->Backward(ctx, out_grad, in_data, out_data, req, out, aux);
}

void MergeShapeInto(Shape* to, const Shape& from) {
  MergeShape(to, from);
}
void MergeTypeInto(DType* to, DType from) {
  if (*to == DType::kUnknown) *to = from;
}

}  // namespace

Op& RegisterOpProperty(const std::string& name,
                       std::function<std::unique_ptr<OperatorProperty>()> factory) {
  Op& fwd = Op::Register(name);
  Op& bwd = Op::Register("_backward_" + name);
  auto parser = [factory](NodeAttrs* attrs) { ParseProperty(factory, attrs); };
  const std::string backward_name = bwd.name();

  fwd.set_num_inputs([](const NodeAttrs& a) { return NodeOf(a).n_args + NodeOf(a).n_aux; })
      .set_num_outputs([](const NodeAttrs& a) { return NodeOf(a).n_out; })
      .set_attr_parser(parser)
      .set_attr<FListInputNames>("FListInputNames",
                                 [](const NodeAttrs& a) {
                                   std::vector<std::string> names = NodeOf(a).prop->ListArguments();
                                   for (auto& s : NodeOf(a).prop->ListAuxiliaryStates())
                                     names.push_back(s);
                                   return names;
                                 })
      .set_attr<FListOutputNames>("FListOutputNames",
                                  [](const NodeAttrs& a) { return NodeOf(a).prop->ListOutputs(); })
      .set_attr<FNumVisibleOutputs>("FNumVisibleOutputs",
                                    [](const NodeAttrs& a) { return NodeOf(a).n_vis; })
      .set_attr<FMutateInputs>("FMutateInputs",
                               [](const NodeAttrs& a) {
                                 std::vector<uint32_t> aux;
                                 for (uint32_t i = 0; i < NodeOf(a).n_aux; ++i)
                                   aux.push_back(NodeOf(a).n_args + i);
                                 return aux;
                               })
      .set_attr<FInferShape>(
          "FInferShape",
          [](const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
            const PropertyNode& node = NodeOf(attrs);
            std::vector<Shape> args(in->begin(), in->begin() + node.n_args);
            std::vector<Shape> aux(in->begin() + node.n_args, in->end());
            auto merge = [&](std::vector<Shape>* v, size_t i, const Shape& s, const char* what) {
              AssignShape(attrs, v, i, s, what);
            };
            const bool ok = InferThroughProperty(attrs, &args, out, &aux, InferShapeCall, merge);
            std::copy(args.begin(), args.end(), in->begin());
            std::copy(aux.begin(), aux.end(), in->begin() + node.n_args);
            return ok && AllKnown(*out);
          })
      .set_attr<FInferType>(
          "FInferType",
          [](const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
            const PropertyNode& node = NodeOf(attrs);
            std::vector<DType> args(in->begin(), in->begin() + node.n_args);
            std::vector<DType> aux(in->begin() + node.n_args, in->end());
            auto merge = [&](std::vector<DType>* v, size_t i, DType t, const char* what) {
              AssignType(attrs, v, i, t, what);
            };
            const bool ok = InferThroughProperty(attrs, &args, out, &aux, InferTypeCall, merge);
            std::copy(args.begin(), args.end(), in->begin());
            std::copy(aux.begin(), aux.end(), in->begin() + node.n_args);
            return ok && AllKnown(*out);
          })
      .set_attr<FResourceRequest>(
          "FResourceRequest",
          [](const NodeAttrs& a) { return NodeOf(a).prop->ForwardResource({}); })
      .set_attr<FInplaceOption>(
          "FInplaceOption",
          [](const NodeAttrs& a) {
            const PropertyNode& node = NodeOf(a);
            std::vector<int> out_slots(node.n_out);
            std::vector<void*> handles;
            for (int& s : out_slots) handles.push_back(&s);
            std::vector<std::pair<int, int>> pairs;
            for (auto [in, h] :
                 node.prop->ForwardInplaceOption(node.Ids(PropertyNode::kInData), handles)) {
              const auto o = std::find(handles.begin(), handles.end(), h);
              // ids of in_data are n_vis + j
              if (o != handles.end() && node.KindOf(in) == PropertyNode::kInData)
                pairs.emplace_back(int(node.IndexOf(in)), int(o - handles.begin()));
            }
            return pairs;
          })
      .set_attr<FCreateOpState>(
          "FCreateOpState",
          [](const NodeAttrs& attrs, Context ctx, const std::vector<Shape>& in_shapes,
             const std::vector<DType>& in_types) {
            const uint32_t n = NodeOf(attrs).n_args;
            return CreateState(attrs, ctx, {in_shapes.begin(), in_shapes.begin() + n},
                               {in_types.begin(), in_types.begin() + n});
          })
      .set_attr<FStatefulCompute>(kFStatefulComputeCPU, ForwardCompute)
      .set_attr<FGradient>(
          "FGradient", [backward_name](const NodePtr& n, const std::vector<NodeEntry>& ograds) {
            const PropertyNode& node = NodeOf(n->attrs);
            std::vector<NodeEntry> inputs;
            for (int id : node.deps) {
              const uint32_t i = node.IndexOf(id);
              switch (node.KindOf(id)) {
                case PropertyNode::kOutGrad:
                  inputs.push_back(ograds.at(i));
                  break;
                case PropertyNode::kInData:
                  inputs.push_back(n->inputs.at(i));
                  break;
                case PropertyNode::kOutData:
                  inputs.push_back({n, i, 0});
                  break;
              }
            }
            for (uint32_t a = 0; a < node.n_aux; ++a)
              inputs.push_back(n->inputs.at(node.n_args + a));
            std::vector<NodeEntry> grads = MakeGradNode(backward_name, n, std::move(inputs));
            // Aux states are not learned: their gradients are zero.
            for (uint32_t a = 0; a < node.n_aux; ++a)
              grads.push_back(MakeNode("zeros_like",
                                       n->attrs.name + "_aux" + std::to_string(a) + "_nograd",
                                       {n->inputs.at(node.n_args + a)}));
            return grads;
          });

  bwd.describe("Gradient of " + name + ".")
      .set_num_inputs(
          [](const NodeAttrs& a) { return uint32_t(NodeOf(a).deps.size()) + NodeOf(a).n_aux; })
      .set_num_outputs([](const NodeAttrs& a) { return NodeOf(a).n_args; })
      .set_attr_parser(parser)
      .set_attr<TIsBackward>("TIsBackward", true)
      .set_attr<FMutateInputs>("FMutateInputs",
                               [](const NodeAttrs& a) {
                                 std::vector<uint32_t> aux;
                                 const PropertyNode& node = NodeOf(a);
                                 for (uint32_t i = 0; i < node.n_aux; ++i)
                                   aux.push_back(uint32_t(node.deps.size()) + i);
                                 return aux;
                               })
      .set_attr<FInferShape>(
          "FInferShape",
          [](const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
            BackwardInfer(attrs, in, out, InferShapeCall, MergeShapeInto);
            return AllKnown(*out);
          })
      .set_attr<FInferType>(
          "FInferType",
          [](const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
            BackwardInfer(attrs, in, out, InferTypeCall, MergeTypeInto);
            return AllKnown(*out);
          })
      .set_attr<FResourceRequest>(
          "FResourceRequest",
          [](const NodeAttrs& a) { return NodeOf(a).prop->BackwardResource({}); })
      .set_attr<FInplaceOption>(
          "FInplaceOption",
          [](const NodeAttrs& a) {
            const PropertyNode& node = NodeOf(a);
            std::vector<int> grad_slots(node.n_args);
            std::vector<void*> handles;
            for (int& s : grad_slots) handles.push_back(&s);
            std::vector<std::pair<int, int>> pairs;
            for (auto [id, h] : node.prop->BackwardInplaceOption(
                     node.Ids(PropertyNode::kOutGrad), node.Ids(PropertyNode::kInData),
                     node.Ids(PropertyNode::kOutData), handles)) {
              const auto o = std::find(handles.begin(), handles.end(), h);
              const auto p = std::find(node.deps.begin(), node.deps.end(), id);
              if (o != handles.end() && p != node.deps.end())
                pairs.emplace_back(int(p - node.deps.begin()), int(o - handles.begin()));
            }
            return pairs;
          })
      .set_attr<FCreateOpState>(
          "FCreateOpState",
          [](const NodeAttrs& attrs, Context ctx, const std::vector<Shape>& in_shapes,
             const std::vector<DType>& in_types) {
            // The forward argument shapes and dtypes, recovered from the backward's inputs.
            std::vector<Shape> shapes = in_shapes, grad_shapes(NodeOf(attrs).n_args), args;
            BackwardInfer(attrs, &shapes, &grad_shapes, InferShapeCall, MergeShapeInto, &args);
            std::vector<DType> types = in_types, arg_types;
            std::vector<DType> grad_types(NodeOf(attrs).n_args, DType::kUnknown);
            BackwardInfer(attrs, &types, &grad_types, InferTypeCall, MergeTypeInto, &arg_types);
            return CreateState(attrs, ctx, std::move(args), std::move(arg_types));
          })
      .set_attr<FStatefulCompute>(kFStatefulComputeCPU, BackwardCompute);

#ifdef TESSERA_WITH_CUDA
  fwd.set_attr<FStatefulCompute>(kFStatefulComputeGPU, ForwardCompute);
  bwd.set_attr<FStatefulCompute>(kFStatefulComputeGPU, BackwardCompute);
#endif
  return fwd;
}

}  // namespace tessera::op
