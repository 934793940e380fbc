// mx.nd, part 5: mx.nd.save / mx.nd.load over engine/ndarray/serialize.h.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "bind_ndarray.h"
#include "engine/base/error.h"
#include "engine/ndarray/serialize.h"
#include "engine_wait.h"
#include "lua_util.h"

namespace tessera::shell::nd {
namespace {

// mx.nd.save(path, arrays, {format = 'tessera' | 'mxnet'}): `arrays` is an
// NDArray, a list of them, or a table of name -> NDArray.
int Save(lua_State* L) {
  const std::string path = CheckString(L, 1, "mx.nd.save: the path");
  std::vector<NDArray> arrays;
  std::vector<std::string> names;
  if (NDArray* a = ToNDArray(L, 2)) {
    arrays.push_back(*a);
  } else {
    luaL_checktype(L, 2, LUA_TTABLE);
    const int n = static_cast<int>(lua_objlen(L, 2));
    if (n > 0) {
      for (int i = 1; i <= n; ++i) {
        lua_rawgeti(L, 2, i);
        arrays.push_back(CheckNDArray(L, -1, "save"));
        lua_pop(L, 1);
      }
    } else {
      // Sorted names: a Lua table has no order, a file should not vary.
      std::vector<std::pair<std::string, NDArray>> named;
      lua_pushnil(L);
      while (lua_next(L, 2) != 0) {
        if (lua_type(L, -2) != LUA_TSTRING)
          luaL_error(L, "save: keys must all be names or the table a list");
        named.emplace_back(CheckString(L, -2, "mx.nd.save: the name"), CheckNDArray(L, -1, "save"));
        lua_pop(L, 1);
      }
      std::sort(named.begin(), named.end(),
                [](const auto& x, const auto& y) { return x.first < y.first; });
      for (auto& [k, v] : named) {
        names.push_back(k);
        arrays.push_back(v);
      }
    }
  }
  Format fmt = Format::kTessera;
  if (lua_istable(L, 3)) {
    lua_getfield(L, 3, "format");
    if (!lua_isnil(L, -1)) fmt = FormatFromName(CheckString(L, -1, "mx.nd.save: format"));
    lua_pop(L, 1);
  }
  // Wait here, serving Lua work, so the saver's own wait finds them done.
  for (const NDArray& a : arrays)
    if (!a.is_none()) WaitForVar(L, a.var(), engine::WaitMode::kRead);
  SaveNDArrays(path, arrays, names, fmt);
  return 0;
}

// mx.nd.load(path) -> a list, or a table of name -> NDArray for a named file.
int Load(lua_State* L) {
  LoadedArrays loaded = LoadNDArrays(CheckString(L, 1, "mx.nd.load: the path"));
  lua_createtable(L, loaded.names.empty() ? static_cast<int>(loaded.arrays.size()) : 0,
                  static_cast<int>(loaded.names.size()));
  for (size_t i = 0; i < loaded.arrays.size(); ++i) {
    if (loaded.arrays[i].is_none())
      lua_pushboolean(L, false);  // an empty slot keeps the list's positions
    else
      PushNDArray(L, std::move(loaded.arrays[i]));
    if (loaded.names.empty())
      lua_rawseti(L, -2, static_cast<int>(i + 1));
    else
      lua_setfield(L, -2, loaded.names[i].c_str());
  }
  return 1;
}

}  // namespace

void OpenIO(lua_State* L, int nd) {
  SetFunctions(
      L, nd,
      {{"save", Guarded<Save>,
        "mx.nd.save(path, arrays, {format = 'tessera' | 'mxnet'}) -> writes an NDArray, a list "
        "or a table of name -> NDArray (atomically: a temporary file renamed into place)"},
       {"load", Guarded<Load>,
        "mx.nd.load(path) -> a list of NDArrays, or a table of name -> NDArray; reads "
        "Tessera's format and MXNet's .params files; arrays load on cpu(0)"}});
}

}  // namespace tessera::shell::nd
