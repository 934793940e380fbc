// The REPL's `:` commands (:help, :wait, :engine, :time, :profile, :quit)
// and `?name` (help).
#pragma once

#include <lua.hpp>

#include <string>

namespace tessera::shell {

enum class CommandResult { kDone, kQuit };

// `line` starts with ':' or '?'.
CommandResult RunCommand(lua_State* L, const std::string& line, bool color);

extern const char* const kCommandHelp;

}  // namespace tessera::shell
