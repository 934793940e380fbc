// mx.sym, part 2: mx.sym.Variable, mx.sym.Group, and every registered op as
// mx.sym.<op>, made on first access from the registry.
//
//   mx.sym.FullyConnected{data = x, num_hidden = 128, name = 'fc1'}
//   mx.sym.dot(a, b, {transpose_b = true, name = 'd'})
//   mx.sym.concat(a, b, c, {dim = 2})           -- or mx.sym.concat({a, b, c}, {...})
//
// Symbols in the table are inputs by name; `name` names the node; `attr` is a
// table of attributes stored on it; every other key is a parameter,
// converted as mx.nd does (axes 1-based).
#include <map>
#include <string>
#include <vector>

#include "bind_ndarray.h"
#include "bind_symbol.h"
#include "bindings.h"
#include "engine/base/dtype.h"
#include "engine/base/error.h"
#include "engine/op/op_attr_types.h"
#include "lua_util.h"
#include "op_call_options.h"

namespace tessera::shell::sym {

using graph::Symbol;

namespace {

bool IsSymbolList(lua_State* L, int index) {
  if (!lua_istable(L, index)) return false;
  lua_rawgeti(L, index, 1);
  const bool yes = ToSymbol(L, -1) != nullptr;
  lua_pop(L, 1);
  return yes;
}

// Attribute values as MXNet stores them: strings, numbers, booleans.
void ReadAttrTable(lua_State* L, int index, const char* what, op::ParamDict* dict) {
  luaL_checktype(L, index, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, index) != 0) {
    if (lua_type(L, -2) != LUA_TSTRING)
      luaL_error(L, "%s: attribute keys must be names, got a %s", what, luaL_typename(L, -2));
    const std::string key = CheckKey(L, -2, std::string(what) + ": an attribute key");
    (*dict)[key] = nd::ParamText(L, -1, false, what, key);
    lua_pop(L, 1);
  }
}

// mx.sym.<op>(inputs..., {params}). Upvalue 1: the Op.
int CallOp(lua_State* L) {
  const auto* op = static_cast<const op::Op*>(lua_touserdata(L, lua_upvalueindex(1)));
  int top = lua_gettop(L);
  int opts = 0;
  // The trailing table holds the parameters, and any inputs listed in it,
  // unless it is a plain list of inputs ({a, b}).
  if (top >= 1 && lua_istable(L, top) && (!IsSymbolList(L, top) || HasNamedKeys(L, top)))
    opts = top--;
  std::vector<Symbol> args;
  for (int i = 1; i <= top; ++i) {
    if (Symbol* s = ToSymbol(L, i))
      args.push_back(*s);
    else if (IsSymbolList(L, i))
      AppendSymbolList(L, i, op->name().c_str(), &args);
    else
      luaL_error(L,
                 "%s: argument %d is a %s; inputs are Symbols (or one list of them), "
                 "parameters go in a trailing table",
                 op->name().c_str(), i, luaL_typename(L, i));
  }
  op::ParamDict params;
  std::map<std::string, Symbol> kwargs;
  std::string name;
  if (opts) {
    // {a, b, data = x}: list items are positional inputs.
    ForEachNamedOption(L, opts, op, ToSymbol, [&](const std::string& key) {
      if (Symbol* s = ToSymbol(L, -1)) {
        kwargs[key] = *s;
      } else if (key == "name") {
        name = CheckString(L, -1, op->name() + ": name");
      } else if (key == "attr") {
        ReadAttrTable(L, lua_gettop(L), op->name().c_str(), &params);
      } else {
        const op::FieldInfo* f = FindField(op, key);
        params[key] = nd::ParamText(L, -1, f && f->is_axis, op->name(), key);
      }
    });
    AppendSymbolList(L, opts, op->name().c_str(), &args);
  }
  PushSymbol(L, Symbol::Create(op, std::move(params), args, kwargs, std::move(name)));
  return 1;
}

// mx.sym.Variable(name, {shape=, dtype=, attr=, lr_mult=, wd_mult=, init=}).
int Variable(lua_State* L) {
  std::string name = CheckString(L, 1, "Variable: the name");
  op::ParamDict attrs;
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, 2) != 0) {
      if (lua_type(L, -2) != LUA_TSTRING)
        luaL_error(L, "Variable: option keys must be names, got a %s", luaL_typename(L, -2));
      std::string key = CheckKey(L, -2, "Variable: an option");
      if (key == "shape") {
        attrs["__shape__"] = nd::ShapeText(nd::CheckShape(L, -1, "Variable"));
      } else if (key == "dtype") {
        attrs["__dtype__"] =
            std::to_string(static_cast<int>(DTypeFromName(CheckString(L, -1, "Variable: dtype"))));
      } else if (key == "attr") {
        ReadAttrTable(L, lua_gettop(L), "Variable", &attrs);
      } else if (key == "lr_mult" || key == "wd_mult" || key == "init") {
        attrs["__" + key + "__"] = nd::ParamText(L, -1, false, "Variable", key);
      } else {
        luaL_error(L,
                   "Variable: unknown option '%s' (options: shape, dtype, attr, lr_mult, "
                   "wd_mult, init)",
                   key.c_str());
      }
      lua_pop(L, 1);
    }
  }
  PushSymbol(L, Symbol::Variable(std::move(name), std::move(attrs)));
  return 1;
}

// mx.sym.Group({a, b, ...}) or mx.sym.Group(a, b, ...).
int Group(lua_State* L) {
  std::vector<Symbol> parts;
  for (int i = 1; i <= lua_gettop(L); ++i) {
    if (lua_istable(L, i) && !ToSymbol(L, i))
      AppendSymbolList(L, i, "Group", &parts);
    else
      parts.push_back(CheckSymbol(L, i, "Group"));
  }
  TS_CHECK(!parts.empty()) << "Group: no symbols given";
  PushSymbol(L, graph::Group(parts));
  return 1;
}

std::string SymOpDoc(const op::Op* op, std::string_view name) {
  return "mx.sym." + std::string(name) +
         "(inputs..., {params, name =, attr =}) -> Symbol: the operator " + op->name() +
         " in a graph; inputs left out become variables.\n\n" + FindDoc(name).value_or("");
}

// Names of the ops with a gradient rule (not the backward ops themselves),
// so tests can check that each one has a gradient check.
int OpsWithGradient(lua_State* L) {
  static const auto& fgrad = op::Op::GetAttr<op::FGradient>("FGradient");
  lua_newtable(L);
  int i = 0;
  for (const op::Op* op : op::Op::ListAll()) {
    if (!fgrad.contains(op) || op->name().starts_with("_backward")) continue;
    lua_pushstring(L, op->name().c_str());
    lua_rawseti(L, -2, ++i);
  }
  return 1;
}

int ResetNames(lua_State*) {
  graph::ResetNames();
  return 0;
}

}  // namespace

void AppendSymbolList(lua_State* L, int index, const char* what, std::vector<Symbol>* out) {
  const int n = static_cast<int>(lua_objlen(L, index));
  for (int j = 1; j <= n; ++j) {
    lua_rawgeti(L, index, j);
    out->push_back(CheckSymbol(L, -1, what));
    lua_pop(L, 1);
  }
}

void OpenOps(lua_State* L, int symt) {
  SetFunctions(
      L, symt,
      {{"Variable", Guarded<Variable>,
        "mx.sym.Variable(name, {shape = {..}, dtype = 'float32', attr = {k = v}, lr_mult =, "
        "wd_mult =, init =}) -> a free variable"},
       {"var", Guarded<Variable>, "mx.sym.var: the same as mx.sym.Variable"},
       {"Group", Guarded<Group>, "mx.sym.Group({a, b, ...}) -> one symbol with all their outputs"},
       {"_ops_with_gradient", Guarded<OpsWithGradient>,
        "mx.sym._ops_with_gradient() -> names of the operators with a gradient rule"},
       {"reset_names", Guarded<ResetNames>,
        "mx.sym.reset_names() -> restarts automatic names (fullyconnected0, ...)"}});
  nd::SetOpNamespace(L, symt, Guarded<CallOp>, SymOpDoc);
}

}  // namespace tessera::shell::sym
