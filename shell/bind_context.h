// Contexts in Lua: userdata of metatable "tessera.Context", printed as
// "cpu(0)", equal when device type and id are equal. For other bindings:
#pragma once

#include <lua.hpp>

#include "engine/base/context.h"

namespace tessera::shell {

void PushContext(lua_State* L, Context ctx);
// The context at `index`; raises a Lua error naming `what` if it is not one.
Context CheckContext(lua_State* L, int index, const char* what = "context");
// The context at `index`, or `fallback` when the value is nil or absent.
Context OptContext(lua_State* L, int index, Context fallback);
bool IsContext(lua_State* L, int index);
// Pushes the table of context methods (ctx:empty_cache()), which other
// bindings fill.
void PushContextMethods(lua_State* L);

}  // namespace tessera::shell
