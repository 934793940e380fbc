#include "engine/graph/infer.h"

#include <cstdlib>

#include "engine/graph/input_names.h"
#include "engine/op/infer_utils.h"
#include "engine/op/op_attr_types.h"

namespace tessera::graph {

std::string DescribeInput(const IndexedGraph& g, uint32_t node_id, uint32_t input) {
  const Node& n = *g[node_id].node;
  const std::vector<std::string> names = InputNames(n.attrs);
  const Node& src = *g[g[node_id].inputs[input].node_id].node;
  std::string s = "node '" + n.attrs.name + "' (" + n.op()->name() + "), input '" +
                  (input < names.size() ? names[input] : std::to_string(input)) + "'";
  if (src.is_variable()) s += " (variable '" + src.attrs.name + "')";
  return s;
}

namespace {

bool Known(const Shape& s) {
  return s.known();
}
bool Known(DType t) {
  return t != DType::kUnknown;
}
std::string Text(const Shape& s) {
  return s.ToString();
}
std::string Text(DType t) {
  return t == DType::kUnknown ? "unknown" : DTypeName(t);
}
bool Merge(Shape* to, const Shape& from) {
  return MergeShape(to, from);
}
bool Merge(DType* to, DType from) {
  if (from == DType::kUnknown) return true;
  if (*to == DType::kUnknown) {
    *to = from;
    return true;
  }
  return *to == from;
}

// A variable's __shape__ / __dtype__ hint fills only what the caller left
// unknown; a value given to infer_shape or bind wins (nnvm's InferShape pass
// reads the hint only for an unknown entry; Gluon exports carry hints with a
// fixed batch size).
void FillFromHint(Shape* given, const Shape& hint) {
  if (given->ndim() == 0) {
    *given = hint;
    return;
  }
  if (given->ndim() != hint.ndim()) return;
  for (int i = 0; i < given->ndim(); ++i)
    if ((*given)[i] == 0) (*given)[i] = hint[i];
}
void FillFromHint(DType* given, DType hint) {
  if (*given == DType::kUnknown) *given = hint;
}

Shape SeedFrom(const std::string& text, const Shape*) {
  return Shape::Parse(text);
}
DType SeedFrom(const std::string& text, const DType*) {
  // MXNet writes the type flag ("0"); a name ("float32") is accepted too.
  char* end = nullptr;
  const long flag = std::strtol(text.c_str(), &end, 10);
  if (end && *end == '\0' && end != text.c_str()) return static_cast<DType>(flag);
  return DTypeFromName(text);
}

// The inputs of node `nid` with their values, for error messages.
template <typename T>
std::string InputList(const IndexedGraph& g, uint32_t nid, const std::vector<T>& values) {
  const auto& info = g[nid];
  const std::vector<std::string> names = InputNames(info.node->attrs);
  std::string s;
  for (size_t i = 0; i < info.inputs.size(); ++i) {
    const Node& src = *g[info.inputs[i].node_id].node;
    s += (i ? ", " : "") + (i < names.size() ? names[i] : std::to_string(i)) + " " +
         Text(values[g.entry_id(info.inputs[i])]);
    if (src.is_variable()) s += " ('" + src.attrs.name + "')";
  }
  return s;
}

// One pass engine for shapes and dtypes. FInfer is FInferShape or
// FInferType; `fallback` is used for ops that register none.
template <typename T, typename FInfer>
size_t InferAll(const IndexedGraph& g, std::vector<T>* values, const char* attr_key,
                const char* seed_key, const char* what, const FInfer* fallback) {
  TS_CHECK(values->size() == g.num_entries()) << "infer " << what << ": " << values->size()
                                              << " values for " << g.num_entries() << " entries";
  const auto& finfer = op::Op::GetAttr<FInfer>(attr_key);
  std::vector<T>& v = *values;
  for (uint32_t nid : g.input_nodes()) {
    const Node& n = *g[nid].node;
    auto it = n.attrs.dict.find(seed_key);
    if (it == n.attrs.dict.end()) continue;
    FillFromHint(&v[g.entry_id(nid, 0)], SeedFrom(it->second, static_cast<const T*>(nullptr)));
  }

  auto visit = [&](uint32_t nid) -> bool {
    const auto& info = g[nid];
    const Node& n = *info.node;
    if (n.is_variable()) return false;
    const FInfer* f = finfer.find(n.op());
    if (!f) f = fallback;
    if (!f) return false;
    std::vector<T> in(info.inputs.size()), out(n.num_outputs());
    for (size_t i = 0; i < in.size(); ++i) in[i] = v[g.entry_id(info.inputs[i])];
    for (uint32_t o = 0; o < out.size(); ++o) out[o] = v[g.entry_id(nid, o)];
    try {
      (*f)(n.attrs, &in, &out);
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + " [inputs of node '" + n.attrs.name +
                  "': " + InputList(g, nid, v) + "]");
    }
    bool changed = false;
    for (size_t i = 0; i < in.size(); ++i) {
      T& slot = v[g.entry_id(info.inputs[i])];
      const T before = slot;
      TS_CHECK(Merge(&slot, in[i]))
          << DescribeInput(g, nid, static_cast<uint32_t>(i)) << ": " << what << " " << Text(before)
          << " given, but the op requires " << Text(in[i]);
      changed = changed || !(slot == before);
    }
    for (uint32_t o = 0; o < out.size(); ++o) {
      T& slot = v[g.entry_id(nid, o)];
      const T before = slot;
      TS_CHECK(Merge(&slot, out[o]))
          << "node '" << n.attrs.name << "' (" << n.op()->name() << "), output " << o << ": "
          << what << " " << Text(before) << " conflicts with " << Text(out[o]);
      changed = changed || !(slot == before);
    }
    return changed;
  };

  // Forward then backward sweeps until a fixpoint: each sweep can only fill
  // unknowns, so this ends after at most as many sweeps as unknown values.
  const uint32_t n = static_cast<uint32_t>(g.num_nodes());
  for (size_t sweep = 0; sweep <= g.num_entries() + 1; ++sweep) {
    bool changed = false;
    for (uint32_t nid = 0; nid < n; ++nid) changed = visit(nid) || changed;
    for (uint32_t nid = n; nid-- > 0;) changed = visit(nid) || changed;
    if (!changed) break;
  }
  size_t unknown = 0;
  for (const T& x : v) unknown += Known(x) ? 0 : 1;
  return unknown;
}

}  // namespace

size_t InferShapes(const IndexedGraph& g, std::vector<Shape>* shapes) {
  return InferAll<Shape, op::FInferShape>(g, shapes, "FInferShape", "__shape__", "shape", nullptr);
}

size_t InferTypes(const IndexedGraph& g, std::vector<DType>* types) {
  static const op::FInferType same = op::SameTypeAll;
  return InferAll<DType, op::FInferType>(g, types, "FInferType", "__dtype__", "dtype", &same);
}

}  // namespace tessera::graph
