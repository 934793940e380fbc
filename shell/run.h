// Running code given on the command line: scripts, -e, -l, and the end of a
// run (waiting for the engine). Each reports its own errors to stderr and
// returns false on failure.
#pragma once

#include <lua.hpp>

#include <string>

namespace tessera::shell {

// Writes "tessera: msg" to stderr, in red when stderr is a colour terminal.
void ReportError(const std::string& msg);
// Whether `fd` is a terminal that takes ANSI colours (TERM set, not "dumb",
// NO_COLOR unset or empty).
bool UseColor(int fd);

// Calls the function below `nargs` arguments on the stack; serves the task
// queue afterwards. Results are dropped.
bool CallChunk(lua_State* L, int nargs);
bool RunString(lua_State* L, const std::string& code, const char* chunkname);
bool RequireModule(lua_State* L, const std::string& name);
// Sets the global `arg` as lua.c does: arg[0] the script, arg[1..] its
// arguments, arg[-1..] what came before. `script` indexes argv (0: none).
void SetArgTable(lua_State* L, int argc, char** argv, int script);
// Runs the script argv[script] (or stdin for "-" or null) with its arguments.
bool RunScript(lua_State* L, int argc, char** argv, int script);
// Waits for every engine op; reports a failure.
bool WaitForEngine(lua_State* L);

}  // namespace tessera::shell
