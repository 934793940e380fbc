// The shell's waits. Every wait the Lua API exposes (mx.engine.wait_for_var,
// mx.waitall, :wait, and the NDArray bindings' wait_to_read, printing,
// totable) must go through these, never through Engine::WaitForVar directly:
// a var may depend on Lua work that only the interpreter thread can run, so
// the interpreter must keep serving its queue while it waits.
//
// Both throw tessera::Error: the failed op's error (named by the engine),
// "interrupted" on Ctrl-C (the engine's work carries on; an error it later
// reports surfaces at the next wait), or a wait that would wait for the Lua
// op running it. Call them on the interpreter thread, with the running Lua
// thread `L`.
#pragma once

#include <lua.hpp>

#include "engine/scheduler/engine.h"
#include "engine/scheduler/push_group.h"

namespace tessera::shell {

void WaitForVar(lua_State* L, engine::VarHandle var,
                engine::WaitMode mode = engine::WaitMode::kRead);
void WaitForAll(lua_State* L);
// Waits for the ops of a closed group (engine/scheduler/push_group.h), then
// raises the first of their errors.
void WaitForGroup(lua_State* L, engine::PushGroup& group);

}  // namespace tessera::shell
