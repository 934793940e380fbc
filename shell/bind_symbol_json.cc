// mx.sym, part 4: JSON in MXNet's layout. s:tojson(), s:save(path),
// mx.sym.load(path), mx.sym.fromjson(text).
#include <string>

#include "bind_symbol.h"
#include "engine/graph/json.h"
#include "lua_util.h"

namespace tessera::shell::sym {
namespace {

int ToJSON(lua_State* L) {
  const std::string text = graph::SaveJSON(CheckSymbol(L, 1));
  lua_pushlstring(L, text.data(), text.size());
  return 1;
}

int Save(lua_State* L) {
  graph::SaveSymbolFile(CheckSymbol(L, 1), CheckString(L, 2, "save: the path"));
  return 0;
}

int Load(lua_State* L) {
  PushSymbol(L, graph::LoadSymbolFile(CheckString(L, 1, "mx.sym.load: the path")));
  return 1;
}

int FromJSON(lua_State* L) {
  size_t n = 0;
  const char* text = luaL_checklstring(L, 1, &n);
  PushSymbol(L, graph::LoadJSON(std::string_view(text, n), "fromjson"));
  return 1;
}

}  // namespace

void OpenJSON(lua_State* L, int symt, int methods) {
  SetFunctions(L, methods,
               {{"tojson", Guarded<ToJSON>, "s:tojson() -> the symbol as JSON, MXNet's layout"},
                {"save", Guarded<Save>,
                 "s:save(path) -> writes s:tojson() to path (a temporary file, then renamed)"}});
  SetFunctions(
      L, symt,
      {{"load", Guarded<Load>,
        "mx.sym.load(path) -> the symbol in a JSON file (MXNet's layouts, 0.8 to 1.x)"},
       {"fromjson", Guarded<FromJSON>, "mx.sym.fromjson(text) -> the symbol described by text"},
       {"load_json", Guarded<FromJSON>, "mx.sym.load_json(text): MXNet's name of fromjson"}});
}

}  // namespace tessera::shell::sym
