// require 'tessera.internal': what the embedded Lua modules need from C++
// (file listing for the test runner, doc sources, the version, whether the
// operator registrations have run). Not part of
// the public API.
#include <algorithm>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "bindings.h"
#include "engine/base/error.h"
#include "engine/op/deferred_init.h"
#include "lua_util.h"

namespace tessera::shell {
namespace {

namespace fs = std::filesystem;

// The *.lua files under `path` (or `path` itself), sorted.
int ListLuaFiles(lua_State* L) {
  fs::path root = CheckString(L, 1, "--test: the path");
  std::error_code ec;
  std::vector<std::string> files;
  if (fs::is_regular_file(root, ec)) {
    files.push_back(root.string());
  } else {
    TS_CHECK(fs::is_directory(root, ec)) << "--test: no such file or directory: " << root.string();
    for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file(ec) && it->path().extension() == ".lua")
        files.push_back(it->path().string());
    TS_CHECK(!ec) << "--test: cannot list " << root.string() << ": " << ec.message();
  }
  std::sort(files.begin(), files.end());
  lua_createtable(L, static_cast<int>(files.size()), 0);
  for (size_t i = 0; i < files.size(); ++i) {
    lua_pushlstring(L, files[i].data(), files[i].size());
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
  return 1;
}

// Whether the operator registrations have run (engine/op/deferred_init.h):
// start-up must not make them, the first operator call must.
int RegistryLoaded(lua_State* L) {
  lua_pushboolean(L, op::DeferredInitDone());
  return 1;
}

int FindDocByName(lua_State* L) {
  auto doc = FindDoc(CheckString(L, 1, "help: the name"));
  if (!doc) return 0;
  lua_pushlstring(L, doc->data(), doc->size());
  return 1;
}

void Open(lua_State* L, int) {
  lua_newtable(L);
  SetFunctions(L, -1,
               {{"list_lua_files", Guarded<ListLuaFiles>, nullptr},
                {"find_doc", Guarded<FindDocByName>, nullptr},
                {"registry_loaded", Guarded<RegistryLoaded>, nullptr}});
  lua_pushliteral(L, TESSERA_VERSION);
  lua_setfield(L, -2, "version");
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "loaded");
  lua_pushvalue(L, -3);
  lua_setfield(L, -2, "tessera.internal");
  lua_pop(L, 3);
}

}  // namespace

TESSERA_SHELL_BINDING(internal, 0, Open);

}  // namespace tessera::shell
