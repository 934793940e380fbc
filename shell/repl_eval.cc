#include "repl_eval.h"

#include <luajit.h>

#include <cstring>

#include "interpreter.h"
#include "lua_util.h"
#include "run.h"

namespace tessera::shell {

bool IsQuiet(const std::string& chunk) {
  size_t end = chunk.find_last_not_of(" \t\r\n");
  return end != std::string::npos && chunk[end] == ';';
}

LoadResult LoadChunk(lua_State* L, const std::string& chunk) {
  std::string expr = "return " + chunk;
  if (luaL_loadbuffer(L, expr.data(), expr.size(), "=stdin") == 0) return LoadResult::kOk;
  lua_pop(L, 1);
  int status = luaL_loadbuffer(L, chunk.data(), chunk.size(), "=stdin");
  if (status == 0) return LoadResult::kOk;
  if (status == LUA_ERRSYNTAX) {
    size_t n = 0;
    const char* msg = lua_tolstring(L, -1, &n);
    static const char kEof[] = "'<eof>'";
    const size_t k = sizeof kEof - 1;
    if (msg && n >= k && std::strcmp(msg + n - k, kEof) == 0) {
      lua_pop(L, 1);
      return LoadResult::kIncomplete;
    }
  }
  return LoadResult::kError;
}

bool EvalLoaded(lua_State* L, bool quiet, bool color) {
  // JIT-compiled code never sees the Ctrl-C hook. Functions defined in the
  // chunk are still compiled; only its own top level is interpreted.
  luaJIT_setmode(L, -1, LUAJIT_MODE_FUNC | LUAJIT_MODE_OFF);
  int base = lua_gettop(L) - 1;
  int status = CallWithTraceback(L, 0, LUA_MULTRET);
  Interpreter::Get()->Drain(L);
  if (status != 0) {
    ReportError(ErrorText(L));
    lua_settop(L, base);
    return false;
  }
  int n = lua_gettop(L) - base;
  if (n > 0 && !quiet) {
    lua_getglobal(L, "require");
    lua_pushliteral(L, "tessera.pretty");
    lua_call(L, 1, 1);
    lua_getfield(L, -1, "print_values");
    lua_remove(L, -2);
    lua_insert(L, base + 1);
    lua_pushboolean(L, color);
    lua_insert(L, base + 2);
    lua_pushinteger(L, n);
    lua_insert(L, base + 3);
    if (CallWithTraceback(L, n + 2, 0) != 0) {
      ReportError("cannot print the result: " + ErrorText(L));
    }
  }
  lua_settop(L, base);
  return true;
}

bool EvalString(lua_State* L, const std::string& chunk, bool color) {
  LoadResult r = LoadChunk(L, chunk);
  if (r == LoadResult::kIncomplete) {
    ReportError("incomplete statement: " + chunk);
    return false;
  }
  if (r == LoadResult::kError) {
    ReportError(ErrorText(L));
    lua_pop(L, 1);
    return false;
  }
  return EvalLoaded(L, IsQuiet(chunk), color);
}

}  // namespace tessera::shell
