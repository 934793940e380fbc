// The trailing table of an op call from Lua, mx.nd.<op>(...) and
// mx.sym.<op>(...): {a, b, dim = 1} holds the parameters by name beside the
// inputs listed in it.
#pragma once

#include <lua.hpp>

#include <string>
#include <string_view>

#include "engine/op/op.h"
#include "lua_util.h"

namespace tessera::shell {

// The parameter `key` as `op` declares it, or nullptr.
inline const op::FieldInfo* FindField(const op::Op* op, std::string_view key) {
  for (const op::FieldInfo& f : op->params())
    if (f.name == key) return &f;
  return nullptr;
}

// Calls on_named(key) for each entry of the table at `opts` (an absolute
// index) with a name for its key, the value on top of the stack; on_named
// leaves the stack as it found it. List items that is_input(L, -1) takes
// are the call's positional inputs ({a, b, dim = 1}), left for the caller to
// take in order; any other key that is not a name is an error naming the op.
template <typename IsInput, typename OnNamed>
void ForEachNamedOption(lua_State* L, int opts, const op::Op* op, IsInput is_input,
                        OnNamed on_named) {
  lua_pushnil(L);
  while (lua_next(L, opts) != 0) {
    if (lua_type(L, -2) != LUA_TSTRING) {
      if (lua_type(L, -2) == LUA_TNUMBER && is_input(L, -1)) {
        lua_pop(L, 1);
        continue;
      }
      luaL_error(L, "%s: parameter keys must be names, got a %s", op->name().c_str(),
                 luaL_typename(L, -2));
    }
    on_named(CheckKey(L, -2, op->name() + ": a parameter name"));
    lua_pop(L, 1);
  }
}

}  // namespace tessera::shell
