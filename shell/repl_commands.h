// The REPL's `:` commands (:help, :wait, :engine, :memory, :time, :timing,
// :profile, :plot, :who, :quit)
// and `?name` (help).
#pragma once

#include <lua.hpp>

#include <functional>
#include <string>

namespace tessera::shell {

enum class CommandResult { kDone, kQuit };

// `line` starts with ':' or '?'.
CommandResult RunCommand(lua_State* L, const std::string& line, bool color);

extern const char* const kCommandHelp;

// :timing on: every line's wall time is printed after it.
bool TimingEnabled();
// Runs `run` (which reports its own errors and returns false after one),
// waits for exactly the engine work it pushed, prints "time: X ms" (marked
// failed when it or that work failed), then that work's error.
void RunTimed(lua_State* L, const std::function<bool()>& run);

}  // namespace tessera::shell
