// mx.sym, part 4: JSON in MXNet's layout. s:tojson(), s:save(path),
// mx.sym.load(path), mx.sym.fromjson(text); and s:_graph(), the same graph
// as Lua tables (what mx.viz draws).
#include <string>
#include <unordered_map>

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

void SetString(lua_State* L, const char* key, const std::string& value) {
  lua_pushlstring(L, value.data(), value.size());
  lua_setfield(L, -2, key);
}

// {index, output} (1-based index into nodes, 0-based output, as MXNet's JSON).
void PushEntry(lua_State* L, const std::unordered_map<const op::Node*, int>& index,
               const op::NodeEntry& e) {
  lua_createtable(L, 2, 0);
  lua_pushinteger(L, index.at(e.node.get()));
  lua_rawseti(L, -2, 1);
  lua_pushinteger(L, e.index);
  lua_rawseti(L, -2, 2);
}

// s:_graph() -> {nodes = {{name, op ('null' for a variable), attrs = {k = v},
// inputs = {{node, output}, ...}, num_outputs}, ...} in topological order,
// heads = {{node, output}, ...}}.
int Graph(lua_State* L) {
  const graph::Symbol& s = CheckSymbol(L, 1);
  std::vector<op::NodePtr> nodes;
  std::unordered_map<const op::Node*, int> index;
  graph::DFSVisit(s.outputs, [&](const op::NodePtr& n) {
    nodes.push_back(n);
    index[n.get()] = static_cast<int>(nodes.size());
  });
  lua_createtable(L, 0, 2);
  lua_createtable(L, static_cast<int>(nodes.size()), 0);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const op::Node& n = *nodes[i];
    lua_createtable(L, 0, 5);
    SetString(L, "name", n.attrs.name);
    SetString(L, "op", n.is_variable() ? "null" : n.op()->name());
    lua_createtable(L, 0, static_cast<int>(n.attrs.dict.size()));
    for (const auto& [k, v] : n.attrs.dict) SetString(L, k.c_str(), v);
    lua_setfield(L, -2, "attrs");
    lua_createtable(L, static_cast<int>(n.inputs.size()), 0);
    for (size_t j = 0; j < n.inputs.size(); ++j) {
      PushEntry(L, index, n.inputs[j]);
      lua_rawseti(L, -2, static_cast<int>(j + 1));
    }
    lua_setfield(L, -2, "inputs");
    lua_pushinteger(L, n.num_outputs());
    lua_setfield(L, -2, "num_outputs");
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
  lua_setfield(L, -2, "nodes");
  lua_createtable(L, static_cast<int>(s.outputs.size()), 0);
  for (size_t j = 0; j < s.outputs.size(); ++j) {
    PushEntry(L, index, s.outputs[j]);
    lua_rawseti(L, -2, static_cast<int>(j + 1));
  }
  lua_setfield(L, -2, "heads");
  return 1;
}

}  // namespace

void OpenJSON(lua_State* L, int symt, int methods) {
  SetFunctions(L, methods,
               {{"_graph", Guarded<Graph>,
                 "s:_graph() -> {nodes = {{name, op, attrs, inputs, num_outputs}}, heads}: the "
                 "graph as tables, in topological order (inputs: {node, output})"},
                {"tojson", Guarded<ToJSON>, "s:tojson() -> the symbol as JSON, MXNet's layout"},
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
