#include "run.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "engine_wait.h"
#include "interpreter.h"
#include "lua_util.h"

namespace tessera::shell {

bool UseColor(int fd) {
  if (!isatty(fd)) return false;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color && *no_color) return false;
  const char* term = std::getenv("TERM");
  return term && *term && std::strcmp(term, "dumb") != 0;
}

void ReportError(const std::string& msg) {
  std::fflush(stdout);
  if (UseColor(STDERR_FILENO))
    std::fprintf(stderr, "\033[31mtessera: %s\033[0m\n", msg.c_str());
  else
    std::fprintf(stderr, "tessera: %s\n", msg.c_str());
  std::fflush(stderr);
}

bool CallChunk(lua_State* L, int nargs) {
  int status = CallWithTraceback(L, nargs, 0);
  if (status != 0) {
    ReportError(ErrorText(L));
    lua_pop(L, 1);
  }
  Interpreter::Get()->Drain(L);
  return status == 0;
}

bool RunString(lua_State* L, const std::string& code, const char* chunkname) {
  if (luaL_loadbuffer(L, code.data(), code.size(), chunkname) != 0) {
    ReportError(ErrorText(L));
    lua_pop(L, 1);
    return false;
  }
  return CallChunk(L, 0);
}

bool RequireModule(lua_State* L, const std::string& name) {
  lua_getglobal(L, "require");
  lua_pushlstring(L, name.data(), name.size());
  if (CallWithTraceback(L, 1, 1) != 0) {
    ReportError(ErrorText(L));
    lua_pop(L, 1);
    return false;
  }
  lua_setglobal(L, name.c_str());
  return true;
}

void SetArgTable(lua_State* L, int argc, char** argv, int script) {
  int base = script > 0 ? script : argc;
  lua_createtable(L, argc - base, base + 1);
  for (int i = 0; i < argc; ++i) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - base);
  }
  lua_setglobal(L, "arg");
}

bool RunScript(lua_State* L, int argc, char** argv, int script) {
  const char* path = script > 0 ? argv[script] : nullptr;
  if (path && !std::strcmp(path, "-")) path = nullptr;
  // luaL_loadfile skips a first line starting with '#', for #! scripts.
  if (luaL_loadfile(L, path) != 0) {
    ReportError(ErrorText(L));
    lua_pop(L, 1);
    return false;
  }
  int nargs = 0;
  for (int i = script > 0 ? script + 1 : argc; i < argc; ++i, ++nargs) lua_pushstring(L, argv[i]);
  return CallChunk(L, nargs);
}

bool WaitForEngine(lua_State* L) {
  // Until the engine is idle: a wait can end early with an error (one
  // reported by a wait given up on), while work is still queued.
  bool ok = true;
  for (;;) {
    try {
      WaitForAll(L);
      return ok;
    } catch (const std::exception& e) {
      ReportError(e.what());
      ok = false;
      if (engine::Engine::Get()->Stats().pending == 0) return false;
    }
  }
}

}  // namespace tessera::shell
