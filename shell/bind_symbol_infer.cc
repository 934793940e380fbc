// mx.sym, part 3: s:infer_shape / infer_shape_partial / infer_type /
// infer_type_partial. Known shapes or dtypes are given by argument name (or
// positionally, in list_arguments order); the results are three lists, for
// list_arguments, list_outputs and list_auxiliary_states.
#include <string>
#include <vector>

#include "bind_ndarray.h"
#include "bind_symbol.h"
#include "engine/base/error.h"
#include "engine/graph/indexed_graph.h"
#include "engine/graph/infer.h"
#include "lua_util.h"

namespace tessera::shell::sym {

using graph::IndexedGraph;
using graph::Symbol;

namespace {

// The argument and auxiliary-state nodes of `g`, in list order.
void SplitInputs(const IndexedGraph& g, std::vector<uint32_t>* args, std::vector<uint32_t>* aux) {
  for (uint32_t nid : g.input_nodes()) (g.is_mutable_input(nid) ? aux : args)->push_back(nid);
}

// Reads {name = value, ...} or {value, value, ...} into per-entry values.
template <typename T, typename Read>
void Seed(lua_State* L, int index, const IndexedGraph& g, const char* what, std::vector<T>* values,
          Read read) {
  if (lua_isnoneornil(L, index)) return;
  luaL_checktype(L, index, LUA_TTABLE);
  std::vector<uint32_t> args, aux;
  SplitInputs(g, &args, &aux);
  std::vector<uint32_t> inputs = args;
  inputs.insert(inputs.end(), aux.begin(), aux.end());
  lua_pushnil(L);
  while (lua_next(L, index) != 0) {
    const int v = lua_gettop(L);
    if (lua_type(L, -2) == LUA_TNUMBER) {
      const auto i = static_cast<size_t>(lua_tonumber(L, -2));
      if (i < 1 || i > args.size())
        luaL_error(L, "%s: positional value %d, but the symbol has %d arguments", what,
                   static_cast<int>(i), static_cast<int>(args.size()));
      (*values)[g.entry_id(args[i - 1], 0)] = read(L, v);
    } else {
      std::string key = CheckKey(L, -2, std::string(what) + ": an argument name");
      bool found = false;
      for (uint32_t nid : inputs)
        if (g[nid].node->attrs.name == key) {
          (*values)[g.entry_id(nid, 0)] = read(L, v);
          found = true;
        }
      if (!found) {
        std::string list;
        for (uint32_t nid : args) list += (list.empty() ? "" : ", ") + g[nid].node->attrs.name;
        TS_THROW << what << ": '" << key
                 << "' is not an argument of the symbol (arguments: " << list << ")";
      }
    }
    lua_pop(L, 1);
  }
}

void PushShape(lua_State* L, const Shape& s) {
  lua_createtable(L, s.ndim(), 0);
  for (int i = 0; i < s.ndim(); ++i) {
    lua_pushnumber(L, static_cast<lua_Number>(s[i]));
    lua_rawseti(L, -2, i + 1);
  }
}

void PushType(lua_State* L, DType t) {
  if (t == DType::kUnknown)
    lua_pushboolean(L, 0);
  else
    lua_pushstring(L, DTypeName(t));
}

template <typename T, typename Push>
void PushList(lua_State* L, const IndexedGraph& g, const std::vector<uint32_t>& entries,
              const std::vector<T>& values, Push push) {
  lua_createtable(L, static_cast<int>(entries.size()), 0);
  for (size_t i = 0; i < entries.size(); ++i) {
    push(L, values[entries[i]]);
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
  (void)g;
}

template <typename T, typename Read, typename Infer, typename Push>
int InferImpl(lua_State* L, bool partial, const char* what, T unknown, Read read, Infer infer,
              Push push) {
  const Symbol& s = CheckSymbol(L, 1, what);
  IndexedGraph g(s.outputs);
  std::vector<T> values(g.num_entries(), unknown);
  Seed(L, 2, g, what, &values, read);
  const size_t left = infer(g, &values);
  if (left && !partial) {
    // Not an error: the caller did not give enough (MXNet returns None).
    lua_pushnil(L);
    lua_pushnil(L);
    lua_pushnil(L);
    return 3;
  }
  std::vector<uint32_t> args, aux, outs;
  SplitInputs(g, &args, &aux);
  for (uint32_t& nid : args) nid = g.entry_id(nid, 0);
  for (uint32_t& nid : aux) nid = g.entry_id(nid, 0);
  for (const auto& e : g.outputs()) outs.push_back(g.entry_id(e));
  PushList(L, g, args, values, push);
  PushList(L, g, outs, values, push);
  PushList(L, g, aux, values, push);
  return 3;
}

Shape ReadShape(lua_State* L, int index) {
  return nd::CheckShape(L, index, "infer_shape");
}
DType ReadType(lua_State* L, int index) {
  return DTypeFromName(CheckString(L, index, "infer_type: dtype"));
}

int InferShape(lua_State* L) {
  return InferImpl<Shape>(L, false, "infer_shape", Shape(), ReadShape, graph::InferShapes,
                          PushShape);
}
int InferShapePartial(lua_State* L) {
  return InferImpl<Shape>(L, true, "infer_shape_partial", Shape(), ReadShape, graph::InferShapes,
                          PushShape);
}
int InferType(lua_State* L) {
  return InferImpl<DType>(L, false, "infer_type", DType::kUnknown, ReadType, graph::InferTypes,
                          PushType);
}
int InferTypePartial(lua_State* L) {
  return InferImpl<DType>(L, true, "infer_type_partial", DType::kUnknown, ReadType,
                          graph::InferTypes, PushType);
}

}  // namespace

void OpenInfer(lua_State* L, int methods) {
  SetFunctions(
      L, methods,
      {{"infer_shape", Guarded<InferShape>,
        "s:infer_shape{name = {d1, d2, ...}, ...} -> arg_shapes, out_shapes, aux_shapes (lists "
        "in list_arguments / list_outputs / list_auxiliary_states order), or nil, nil, nil "
        "when some shape stays unknown. A 0 dimension is unknown; conflicts raise an error "
        "naming the node, the input and both shapes."},
       {"infer_shape_partial", Guarded<InferShapePartial>,
        "s:infer_shape_partial{...} -> as infer_shape, with what could be inferred: unknown "
        "shapes are {} and unknown dimensions 0"},
       {"infer_type", Guarded<InferType>,
        "s:infer_type{name = 'float32', ...} -> arg_types, out_types, aux_types (dtype names), "
        "or nil, nil, nil when some dtype stays unknown"},
       {"infer_type_partial", Guarded<InferTypePartial>,
        "s:infer_type_partial{...} -> as infer_type; unknown dtypes are false"}});
}

}  // namespace tessera::shell::sym
