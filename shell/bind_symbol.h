// mx.sym: symbols in Lua. Shared by the files of the binding:
//   bind_symbol.cc       the userdata, its methods, fields and operators;
//   bind_symbol_ops.cc   mx.sym.<op> for every registered op, Variable, Group;
//   bind_symbol_infer.cc infer_shape / infer_type (complete and partial);
//   bind_symbol_json.cc  tojson, save, mx.sym.load, mx.sym.fromjson;
//   bind_executor.cc     bind / simple_bind and the executor userdata;
//   bind_symbol_flow.cc  the builders of mx.sym.contrib's control flow.
#pragma once

#include <vector>

#include <lua.hpp>

#include "engine/graph/symbol.h"

namespace tessera::shell::sym {

inline constexpr const char* kSymbolMeta = "tessera.Symbol";

void PushSymbol(lua_State* L, graph::Symbol s);
// The Symbol at `index`, or nullptr. Raises nothing.
graph::Symbol* ToSymbol(lua_State* L, int index);
// The Symbol at `index`; a Lua error naming `what` otherwise.
graph::Symbol& CheckSymbol(lua_State* L, int index, const char* what = "self");
// Appends the Symbols of the list (a table) at `index`; a Lua error naming
// `what` for an item that is not one.
void AppendSymbolList(lua_State* L, int index, const char* what, std::vector<graph::Symbol>* out);

// Openers of the other files: `sym` is mx.sym, `methods` the Symbol methods
// table (absolute indices).
void OpenOps(lua_State* L, int sym);
void OpenInfer(lua_State* L, int methods);
void OpenJSON(lua_State* L, int sym, int methods);
void OpenExecutor(lua_State* L, int sym, int methods);
void OpenControlFlow(lua_State* L, int sym);

}  // namespace tessera::shell::sym
