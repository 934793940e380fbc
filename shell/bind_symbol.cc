// mx.sym, part 1: the Symbol userdata (methods, fields, s[i] and s['name'],
// composition by calling, arithmetic with symbols and numbers) and the opener
// that assembles mx.sym from the other files.
#include "bind_symbol.h"

#include <cmath>
#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "bind_ndarray.h"
#include "bindings.h"
#include "engine/base/error.h"
#include "lua_util.h"

namespace tessera::shell::sym {

using graph::Symbol;

namespace {

int SymGc(lua_State* L) {
  auto* s = static_cast<Symbol*>(luaL_checkudata(L, 1, kSymbolMeta));
  s->~Symbol();
  new (s) Symbol();  // a second finalizer run finds an empty symbol
  return 0;
}

void PushDict(lua_State* L, const op::ParamDict& d) {
  lua_createtable(L, 0, static_cast<int>(d.size()));
  for (const auto& [k, v] : d) {
    lua_pushlstring(L, v.data(), v.size());
    lua_setfield(L, -2, k.c_str());
  }
}

// A table of string keys to values given as strings, numbers or booleans.
op::ParamDict CheckDict(lua_State* L, int index, const char* what) {
  luaL_checktype(L, index, LUA_TTABLE);
  op::ParamDict d;
  lua_pushnil(L);
  while (lua_next(L, index) != 0) {
    if (lua_type(L, -2) != LUA_TSTRING)
      luaL_error(L, "%s: keys must be names, got a %s", what, luaL_typename(L, -2));
    const std::string key = CheckKey(L, -2, std::string(what) + ": a key");
    d[key] = nd::ParamText(L, -1, false, what, key);
    lua_pop(L, 1);
  }
  return d;
}

int ListArguments(lua_State* L) {
  PushStrings(L, CheckSymbol(L, 1).ListArguments());
  return 1;
}
int ListOutputs(lua_State* L) {
  PushStrings(L, CheckSymbol(L, 1).ListOutputs());
  return 1;
}
int ListAux(lua_State* L) {
  PushStrings(L, CheckSymbol(L, 1).ListAuxiliaryStates());
  return 1;
}
int ListInputs(lua_State* L) {
  std::vector<std::string> names;
  for (const auto& n : CheckSymbol(L, 1).ListInputs(Symbol::InputKind::kAll))
    names.push_back(n->attrs.name);
  PushStrings(L, names);
  return 1;
}
int GetInternals(lua_State* L) {
  PushSymbol(L, CheckSymbol(L, 1).GetInternals());
  return 1;
}
int GetChildren(lua_State* L) {
  Symbol c = CheckSymbol(L, 1).GetChildren();
  if (c.outputs.empty()) return 0;
  PushSymbol(L, std::move(c));
  return 1;
}
int Attr(lua_State* L) {
  auto v = CheckSymbol(L, 1).GetAttr(CheckString(L, 2, "attr: the key"));
  if (!v) return 0;
  lua_pushlstring(L, v->data(), v->size());
  return 1;
}
int ListAttr(lua_State* L) {
  PushDict(L, CheckSymbol(L, 1).ListAttr());
  return 1;
}
int AttrDict(lua_State* L) {
  const auto all = CheckSymbol(L, 1).AttrDict();
  lua_createtable(L, 0, static_cast<int>(all.size()));
  for (const auto& [node, dict] : all) {
    PushDict(L, dict);
    lua_setfield(L, -2, node.c_str());
  }
  return 1;
}
int SetAttr(lua_State* L) {
  Symbol& s = CheckSymbol(L, 1);
  s.SetAttrs(CheckDict(L, 2, "set_attr"));
  lua_settop(L, 1);
  return 1;
}
int CopySym(lua_State* L) {
  PushSymbol(L, CheckSymbol(L, 1).Copy());
  return 1;
}

// s{name = other, ...}: composition.
int Call(lua_State* L) {
  Symbol& s = CheckSymbol(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  std::map<std::string, Symbol> kwargs;
  lua_pushnil(L);
  while (lua_next(L, 2) != 0) {
    if (lua_type(L, -2) != LUA_TSTRING)
      luaL_error(L, "compose: keys must be argument names, got a %s", luaL_typename(L, -2));
    kwargs[CheckKey(L, -2, "compose: an argument name")] = CheckSymbol(L, -1, "compose");
    lua_pop(L, 1);
  }
  PushSymbol(L, s.Compose(kwargs));
  return 1;
}

int ToString(lua_State* L) {
  const Symbol& s = CheckSymbol(L, 1);
  std::string text;
  bool one_node = !s.outputs.empty();
  for (const auto& e : s.outputs) one_node = one_node && e.node == s.outputs[0].node;
  if (one_node) {
    text = "<Symbol " + s.outputs[0].node->attrs.name + ">";
  } else {
    text = "<Symbol group [";
    const auto names = s.ListOutputs();
    for (size_t i = 0; i < names.size(); ++i) text += (i ? ", " : "") + names[i];
    text += "]>";
  }
  lua_pushlstring(L, text.data(), text.size());
  return 1;
}

int Len(lua_State* L) {
  lua_pushinteger(L, static_cast<lua_Integer>(CheckSymbol(L, 1).NumOutputs()));
  return 1;
}

// __index: s[i] (1-based output), s['fc1_output'], s.name, then methods.
int SymIndex(lua_State* L) {
  const Symbol& s = CheckSymbol(L, 1);
  if (lua_type(L, 2) == LUA_TNUMBER) {
    const lua_Number i = lua_tonumber(L, 2);
    const auto n = static_cast<lua_Number>(s.NumOutputs());
    if (i != std::floor(i) || i < 1 || i > n)
      luaL_error(L, "symbol: output %f out of range 1..%d", i, static_cast<int>(n));
    PushSymbol(L, s[static_cast<size_t>(i) - 1]);
    return 1;
  }
  if (lua_type(L, 2) != LUA_TSTRING) return 0;
  lua_pushvalue(L, 2);
  lua_rawget(L, lua_upvalueindex(1));
  if (!lua_isnil(L, -1)) return 1;
  size_t len = 0;
  const char* k = lua_tolstring(L, 2, &len);
  const std::string_view key(k, len);
  if (key == "name") {
    bool one_node = !s.outputs.empty();
    for (const auto& e : s.outputs) one_node = one_node && e.node == s.outputs[0].node;
    if (!one_node) return 0;
    lua_pushstring(L, s.outputs[0].node->attrs.name.c_str());
    return 1;
  }
  for (const std::string& name : s.ListOutputs())
    if (name == key) {
      PushSymbol(L, s.Output(key));
      return 1;
    }
  return 0;
}

// Arithmetic: symbol op symbol uses the same-shape op (as MXNet's symbols
// do); a number on either side uses the scalar op.
struct ArithOps {
  const char* both;
  const char* scalar;
  const char* rscalar;  // number op symbol
};

Symbol Apply(const char* op_name, std::vector<Symbol> args, op::ParamDict params = {}) {
  return Symbol::Create(op::Op::Get(op_name), std::move(params), args, {});
}

std::string NumberText(lua_Number x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", static_cast<double>(x));
  return buf;
}

template <const ArithOps& ops>
int Arith(lua_State* L) {
  Symbol* a = ToSymbol(L, 1);
  Symbol* b = ToSymbol(L, 2);
  if (a && b) {
    PushSymbol(L, Apply(ops.both, {*a, *b}));
  } else if (a) {
    PushSymbol(L, Apply(ops.scalar, {*a}, {{"scalar", NumberText(luaL_checknumber(L, 2))}}));
  } else {
    PushSymbol(L, Apply(ops.rscalar, {CheckSymbol(L, 2, "arithmetic")},
                        {{"scalar", NumberText(luaL_checknumber(L, 1))}}));
  }
  return 1;
}

constexpr ArithOps kAdd{"elemwise_add", "_plus_scalar", "_plus_scalar"};
constexpr ArithOps kSub{"elemwise_sub", "_minus_scalar", "_rminus_scalar"};
constexpr ArithOps kMul{"elemwise_mul", "_mul_scalar", "_mul_scalar"};
constexpr ArithOps kDiv{"elemwise_div", "_div_scalar", "_rdiv_scalar"};
constexpr ArithOps kPow{"broadcast_power", "_power_scalar", "_rpower_scalar"};
constexpr ArithOps kMod{"broadcast_mod", "_mod_scalar", "_rmod_scalar"};

int Unm(lua_State* L) {
  PushSymbol(L, Apply("negative", {CheckSymbol(L, 1)}));
  return 1;
}

int IsSymbol(lua_State* L) {
  lua_pushboolean(L, ToSymbol(L, 1) != nullptr);
  return 1;
}

void Open(lua_State* L, int mx) {
  lua_newtable(L);
  const int symt = lua_gettop(L);
  SetDoc(L, symt,
         "mx.sym: symbolic graphs. mx.sym.Variable(name, {shape=, dtype=, attr=}), every "
         "registered operator as mx.sym.<op>(inputs..., {params, name=, attr=}) or "
         "mx.sym.<op>{data = s, ...}, Group, load, fromjson. Methods: list_arguments, "
         "list_outputs, list_auxiliary_states, infer_shape, infer_type, get_internals, "
         "get_children, attr, tojson, save, simple_bind, bind.");

  luaL_newmetatable(L, kSymbolMeta);
  const int meta = lua_gettop(L);
  lua_newtable(L);
  const int methods = lua_gettop(L);
  SetFunctions(
      L, methods,
      {{"list_arguments", Guarded<ListArguments>,
        "s:list_arguments() -> the names of the free variables, in graph order"},
       {"list_outputs", Guarded<ListOutputs>, "s:list_outputs() -> output names ('fc1_output')"},
       {"list_auxiliary_states", Guarded<ListAux>,
        "s:list_auxiliary_states() -> names of the variables ops update (BatchNorm's moving "
        "mean and variance)"},
       {"list_inputs", Guarded<ListInputs>,
        "s:list_inputs() -> every variable: arguments and auxiliary states"},
       {"get_internals", Guarded<GetInternals>,
        "s:get_internals() -> a symbol with every output of every node; index it by name "
        "(s:get_internals()['fc1_output'])"},
       {"get_children", Guarded<GetChildren>,
        "s:get_children() -> the inputs of s's node as one symbol, or nil for a variable"},
       {"attr", Guarded<Attr>, "s:attr(key) -> the attribute of s's node, or nil"},
       {"list_attr", Guarded<ListAttr>, "s:list_attr() -> the attributes of s's node"},
       {"attr_dict", Guarded<AttrDict>,
        "s:attr_dict() -> {node name = {key = value}} for every node with attributes"},
       {"set_attr", Guarded<SetAttr>, "s:set_attr{key = value} -> s, with the attributes set"},
       {"_set_attr", Guarded<SetAttr>, "s:_set_attr{key = value} (MXNet's name of set_attr)"},
       {"copy", Guarded<CopySym>, "s:copy() -> a deep copy"},
       {"compose", Guarded<Call>,
        "s:compose{name = sym} -> a copy with those free variables replaced (also s{...})"}});
  OpenInfer(L, methods);
  OpenJSON(L, symt, methods);
  OpenControlFlow(L, symt);
  OpenExecutor(L, symt, methods);

  SetStandInMetatable(L, meta, methods, "Symbol");

  lua_pushvalue(L, methods);
  lua_pushcclosure(L, Guarded<SymIndex>, 1);
  lua_setfield(L, meta, "__index");
  const LuaFunction metamethods[] = {
      {"__tostring", Guarded<ToString>, nullptr}, {"__len", Guarded<Len>, nullptr},
      {"__call", Guarded<Call>, nullptr},         {"__add", Guarded<Arith<kAdd>>, nullptr},
      {"__sub", Guarded<Arith<kSub>>, nullptr},   {"__mul", Guarded<Arith<kMul>>, nullptr},
      {"__div", Guarded<Arith<kDiv>>, nullptr},   {"__pow", Guarded<Arith<kPow>>, nullptr},
      {"__mod", Guarded<Arith<kMod>>, nullptr},   {"__unm", Guarded<Unm>, nullptr}};
  for (const LuaFunction& f : metamethods) {
    lua_pushcfunction(L, f.fn);
    lua_setfield(L, meta, f.name);
  }
  lua_pushcfunction(L, SymGc);
  lua_setfield(L, meta, "__gc");
  lua_settop(L, symt);

  SetFunctions(L, symt,
               {{"is_symbol", Guarded<IsSymbol>, "mx.sym.is_symbol(x) -> true for a Symbol"}});
  OpenOps(L, symt);  // last: it sets the metatable that serves mx.sym.<op>
  lua_pushvalue(L, symt);
  lua_setfield(L, mx, "symbol");
  lua_setfield(L, mx, "sym");
}

}  // namespace

void PushSymbol(lua_State* L, Symbol s) {
  auto* box = static_cast<Symbol*>(lua_newuserdata(L, sizeof(Symbol)));
  new (box) Symbol(std::move(s));
  luaL_getmetatable(L, kSymbolMeta);
  lua_setmetatable(L, -2);
}

Symbol* ToSymbol(lua_State* L, int index) {
  return static_cast<Symbol*>(luaL_testudata(L, index, kSymbolMeta));
}

Symbol& CheckSymbol(lua_State* L, int index, const char* what) {
  Symbol* s = ToSymbol(L, index);
  if (!s) luaL_error(L, "%s: expected a Symbol, got %s", what, luaL_typename(L, index));
  return *s;
}

TESSERA_SHELL_BINDING(symbol, 50, Open);

}  // namespace tessera::shell::sym
