// SimpleBind and Reshape: argument shapes from a few given by name (the rest
// inferred over the forward graph), then arrays: new ones for SimpleBind;
// for Reshape the old ones where the shape is unchanged, views of the old
// memory where the new array is smaller, new ones where it is larger.
#include <set>

#include "engine/base/array_bytes.h"
#include "engine/graph/graph_executor.h"
#include "engine/graph/infer.h"
#include "engine/ndarray/imperative.h"

namespace tessera::graph {

namespace {

struct InputInfo {
  std::vector<std::string> arg_names, aux_names;
  std::vector<Shape> arg_shapes, aux_shapes;
  std::vector<DType> arg_types, aux_types;
};

std::string NameList(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none" : s;
}

// Inference errors name the node and its inputs; this says which call failed.
template <typename Fn>
size_t Prefixed(const char* what, Fn fn) {
  try {
    return fn();
  } catch (const Error& e) {
    throw Error(std::string(what) + ": " + e.what());
  }
}

// Shapes and dtypes of every argument and auxiliary state. `fallback_*`
// (Reshape: the old arrays) fill what the given shapes leave unknown.
InputInfo InferInputs(const Symbol& sym, const char* what,
                      const std::map<std::string, Shape>& shapes,
                      const std::map<std::string, DType>& types,
                      const std::vector<NDArray>* fallback_args = nullptr,
                      const std::vector<NDArray>* fallback_aux = nullptr) {
  InputInfo info;
  const IndexedGraph g(sym.outputs);
  const auto arg_nodes = sym.ListInputs(Symbol::InputKind::kArguments);
  const auto aux_nodes = sym.ListInputs(Symbol::InputKind::kAuxStates);
  std::map<std::string, uint32_t> entry_of;
  for (const auto& n : arg_nodes) {
    info.arg_names.push_back(n->attrs.name);
    entry_of[n->attrs.name] = g.entry_id(g.node_id(n.get()), 0);
  }
  for (const auto& n : aux_nodes) {
    info.aux_names.push_back(n->attrs.name);
    entry_of[n->attrs.name] = g.entry_id(g.node_id(n.get()), 0);
  }
  auto entry = [&](const std::string& name) {
    auto it = entry_of.find(name);
    TS_CHECK(it != entry_of.end())
        << what << ": '" << name
        << "' is not an argument of the symbol (arguments: " << NameList(info.arg_names)
        << "; auxiliary states: " << NameList(info.aux_names) << ")";
    return it->second;
  };

  std::vector<Shape> sh(g.num_entries());
  for (const auto& [name, shape] : shapes) {
    TS_CHECK(shape.known()) << what << ": the shape " << shape << " given for '" << name
                            << "' has an unknown (0) dimension";
    sh[entry(name)] = shape;
  }
  std::vector<DType> ty(g.num_entries(), DType::kUnknown);
  for (const auto& [name, type] : types) ty[entry(name)] = type;

  auto fill = [&](auto* values, auto get) {
    bool any = false;
    for (size_t i = 0; i < arg_nodes.size(); ++i)
      any |= get((*values)[entry_of[info.arg_names[i]]],
                 fallback_args ? &(*fallback_args)[i] : nullptr);
    for (size_t i = 0; i < aux_nodes.size(); ++i)
      any |=
          get((*values)[entry_of[info.aux_names[i]]], fallback_aux ? &(*fallback_aux)[i] : nullptr);
    return any;
  };
  auto infer_shapes = [&] { return Prefixed(what, [&] { return InferShapes(g, &sh); }); };
  auto infer_types = [&] { return Prefixed(what, [&] { return InferTypes(g, &ty); }); };
  if (infer_shapes() != 0 && fallback_args) {
    const bool filled = fill(&sh, [](Shape& s, const NDArray* old) {
      if (s.known() || !old) return false;
      s = old->shape();
      return true;
    });
    if (filled) infer_shapes();
  }
  if (infer_types() != 0) {
    // Free of any constraint: the old dtype (Reshape), else float32.
    fill(&ty, [](DType& t, const NDArray* old) {
      if (t != DType::kUnknown) return false;
      t = old ? old->dtype() : DType::kFloat32;
      return true;
    });
    infer_types();
  }
  std::vector<std::string> unknown;
  for (const auto* names : {&info.arg_names, &info.aux_names})
    for (const std::string& name : *names)
      if (!sh[entry_of[name]].known())
        unknown.push_back("'" + name + "' " + sh[entry_of[name]].ToString());
  TS_CHECK(unknown.empty()) << what << ": cannot infer the shape of " << NameList(unknown)
                            << "; give it by name";
  for (const auto& name : info.arg_names) {
    info.arg_shapes.push_back(sh[entry_of[name]]);
    info.arg_types.push_back(ty[entry_of[name]]);
  }
  for (const auto& name : info.aux_names) {
    info.aux_shapes.push_back(sh[entry_of[name]]);
    info.aux_types.push_back(ty[entry_of[name]]);
  }
  return info;
}

NDArray Zeros(const Shape& shape, Context ctx, DType dtype) {
  InvokeOptions opt;
  opt.ctx = ctx;
  return Invoke("_zeros", {}, {{"shape", shape.ToString()}, {"dtype", DTypeName(dtype)}}, opt)[0];
}

// Reshape's rule for one array: the old one, a view of its memory, or new.
NDArray Resized(const NDArray& old, const Shape& shape, DType dtype, Context ctx) {
  if (old.is_none()) return Zeros(shape, ctx, dtype);
  if (old.shape() == shape && old.dtype() == dtype) return old;
  const size_t bytes = ArrayBytes(shape, dtype, "reshape");
  if (bytes <= size_t(old.Size()) * DTypeSize(old.dtype())) return old.AsView(shape, dtype);
  return Zeros(shape, ctx, dtype);
}

}  // namespace

std::unique_ptr<Executor> Executor::SimpleBind(const Symbol& sym, Context ctx,
                                               const std::map<std::string, Shape>& shapes,
                                               const std::map<std::string, DType>& types,
                                               const std::map<std::string, OpReqType>& grad_req,
                                               OpReqType default_req) {
  const InputInfo info = InferInputs(sym, "simple_bind", shapes, types);
  const std::set<std::string> arg_set(info.arg_names.begin(), info.arg_names.end());
  for (const auto& [name, req] : grad_req)
    TS_CHECK(arg_set.count(name)) << "simple_bind: grad_req names '" << name
                                  << "', which is not an argument (arguments: "
                                  << NameList(info.arg_names) << ")";
  std::vector<NDArray> args, grads, aux;
  std::vector<OpReqType> reqs;
  for (size_t i = 0; i < info.arg_names.size(); ++i) {
    args.push_back(Zeros(info.arg_shapes[i], ctx, info.arg_types[i]));
    auto it = grad_req.find(info.arg_names[i]);
    const OpReqType req = it == grad_req.end() ? default_req : it->second;
    reqs.push_back(req);
    grads.push_back(req == kNullOp ? NDArray() : Zeros(info.arg_shapes[i], ctx, info.arg_types[i]));
  }
  for (size_t i = 0; i < info.aux_names.size(); ++i)
    aux.push_back(Zeros(info.aux_shapes[i], ctx, info.aux_types[i]));
  return std::make_unique<GraphExecutor>(sym, ctx, std::move(args), std::move(grads),
                                         std::move(reqs), std::move(aux));
}

std::unique_ptr<Executor> GraphExecutor::Reshape(const std::map<std::string, Shape>& shapes) const {
  const InputInfo info = InferInputs(sym_, "reshape", shapes, {}, &args_, &aux_);
  std::vector<NDArray> args, grads, aux;
  for (size_t i = 0; i < args_.size(); ++i) {
    args.push_back(Resized(args_[i], info.arg_shapes[i], info.arg_types[i], ctx_));
    grads.push_back(grad_req_[i] == kNullOp
                        ? NDArray()
                        : Resized(grads_[i], info.arg_shapes[i], info.arg_types[i], ctx_));
  }
  for (size_t i = 0; i < aux_.size(); ++i)
    aux.push_back(Resized(aux_[i], info.aux_shapes[i], info.aux_types[i], ctx_));
  // The internal blocks are shared too: the new executor takes those that
  // are big enough (its own storage ids are ordered by the engine through
  // the blocks' variables, as within one executor).
  auto exe = std::make_unique<GraphExecutor>(sym_, ctx_, std::move(args), std::move(grads),
                                             grad_req_, std::move(aux), blocks_);
  exe->set_bulk_size(bulk_size_);
  return exe;
}

}  // namespace tessera::graph
