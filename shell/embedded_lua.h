// The pure-Lua half of the API, compiled into the binary by embed_lua.cmake.
#pragma once

#include <cstddef>
#include <span>

namespace tessera::shell {

struct EmbeddedLua {
  const char* module;  // "tessera.pretty" for shell/lua/pretty.lua
  const char* path;    // "pretty.lua", for chunk names in tracebacks
  const char* source;
  size_t size;
};

std::span<const EmbeddedLua> EmbeddedLuaModules();

}  // namespace tessera::shell
