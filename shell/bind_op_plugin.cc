// mx.operator.load(path): C++ operator plugins (ops/custom/plugin_loader.h)
// from Lua. The ops a plugin registers are served by mx.nd and mx.sym at
// once: those namespaces look names up in the registry on first access and
// cache only what they found, so there is nothing to refresh.
//
// mx.operator is shared with the operators written in Lua
// (mx.operator.register, ...), which other files add: this binding adds its
// functions to the table whoever creates it first.
#include <string>
#include <vector>

#include "bindings.h"
#include "lua_util.h"
#include "ops/custom/plugin_loader.h"

namespace tessera::shell {
namespace {

int Load(lua_State* L) {
  PushStrings(L, op::LoadOpPlugin(CheckString(L, 1, "mx.operator.load: the path")));
  return 1;
}

int Loaded(lua_State* L) {
  PushStrings(L, op::LoadedOpPlugins());
  return 1;
}

void Open(lua_State* L, int mx) {
  PushTableField(L, mx, "operator");  // shared with the other mx.operator binding
  SetFunctions(
      L, lua_gettop(L),
      {{"load", Guarded<Load>,
        "mx.operator.load(path) -> names of the operators the C++ plugin at `path` registered,\n"
        "callable at once as mx.nd.<name> and mx.sym.<name>. A plugin is a shared library\n"
        "built with TESSERA_OP_PLUGIN() (docs/custom_ops.md); a library built for\n"
        "another tessera, or one that reuses an existing operator name, is refused with an\n"
        "error. Loading the same file again returns the same names and runs nothing."},
       {"loaded", Guarded<Loaded>,
        "mx.operator.loaded() -> the paths of the C++ operator plugins loaded so far"}});
  lua_pop(L, 1);
}

}  // namespace

TESSERA_SHELL_BINDING(op_plugin, 70, Open);

}  // namespace tessera::shell
