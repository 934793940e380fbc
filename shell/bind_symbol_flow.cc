// mx.sym, part 6: the builders behind mx.sym.contrib.foreach, while_loop and
// cond (shell/lua/contrib.lua makes the placeholders, calls the Lua bodies
// and hands their symbols here; engine/graph/control_flow.h cuts them into
// subgraphs).
//
//   mx.sym._make_foreach(body, num_out_data, data_vars, state_vars, data, states [, name])
//   mx.sym._make_while_loop(cond, func, num_out_data, placeholders, loop_vars,
//                           max_iterations [, name])
//   mx.sym._make_cond(pred, then_out, else_out [, name])
#include <string>
#include <vector>

#include "bind_symbol.h"
#include "bindings.h"
#include "engine/graph/control_flow.h"
#include "lua_util.h"

namespace tessera::shell::sym {

using graph::Symbol;

namespace {

std::vector<Symbol> SymbolList(lua_State* L, int index, const char* what) {
  luaL_checktype(L, index, LUA_TTABLE);
  std::vector<Symbol> out;
  AppendSymbolList(L, index, what, &out);
  return out;
}

std::string OptName(lua_State* L, int index) {
  return lua_isnoneornil(L, index) ? std::string() : std::string(luaL_checkstring(L, index));
}

size_t Count(lua_State* L, int index, const char* what) {
  const lua_Number v = luaL_checknumber(L, index);
  if (v < 0 || v != static_cast<lua_Number>(static_cast<int64_t>(v)))
    luaL_error(L, "%s must be a whole number >= 0", what);
  return static_cast<size_t>(v);
}

int MakeForeach(lua_State* L) {
  PushSymbol(L, graph::MakeForeach(
                    CheckSymbol(L, 1, "foreach: body"), Count(L, 2, "foreach: num_out_data"),
                    SymbolList(L, 3, "foreach: slice variables"),
                    SymbolList(L, 4, "foreach: state variables"), SymbolList(L, 5, "foreach: data"),
                    SymbolList(L, 6, "foreach: init_states"), OptName(L, 7)));
  return 1;
}

int MakeWhileLoop(lua_State* L) {
  PushSymbol(
      L, graph::MakeWhileLoop(
             CheckSymbol(L, 1, "while_loop: cond"), CheckSymbol(L, 2, "while_loop: func"),
             Count(L, 3, "while_loop: num_out_data"), SymbolList(L, 4, "while_loop: placeholders"),
             SymbolList(L, 5, "while_loop: loop_vars"),
             static_cast<int64_t>(Count(L, 6, "while_loop: max_iterations")), OptName(L, 7)));
  return 1;
}

int MakeCond(lua_State* L) {
  PushSymbol(L, graph::MakeCond(CheckSymbol(L, 1, "cond: pred"),
                                CheckSymbol(L, 2, "cond: then_func's outputs"),
                                CheckSymbol(L, 3, "cond: else_func's outputs"), OptName(L, 4)));
  return 1;
}

}  // namespace

void OpenControlFlow(lua_State* L, int symt) {
  SetFunctions(L, symt,
               {{"_make_foreach", Guarded<MakeForeach>,
                 "mx.sym._make_foreach(body, num_out_data, data_vars, state_vars, data, states "
                 "[, name]) -> the _foreach node's outputs (use mx.sym.contrib.foreach)"},
                {"_make_while_loop", Guarded<MakeWhileLoop>,
                 "mx.sym._make_while_loop(cond, func, num_out_data, placeholders, loop_vars, "
                 "max_iterations [, name]) -> the _while_loop node's outputs (use "
                 "mx.sym.contrib.while_loop)"},
                {"_make_cond", Guarded<MakeCond>,
                 "mx.sym._make_cond(pred, then_out, else_out [, name]) -> the _cond node's "
                 "outputs (use mx.sym.contrib.cond)"}});
}

}  // namespace tessera::shell::sym
