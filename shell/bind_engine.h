// Engine variables in Lua: userdata of metatable "tessera.engine.Var",
// deleted through the engine (after every use pushed before) when collected.
#pragma once

#include <lua.hpp>

#include "engine/scheduler/engine.h"

namespace tessera::shell {

// The variable the value at `index` stands for (a Var, or anything a
// registered VarSource accepts); raises a Lua error naming `what` otherwise.
engine::VarHandle CheckVar(lua_State* L, int index, const char* what);

}  // namespace tessera::shell
