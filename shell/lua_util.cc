#include "lua_util.h"

#include <cstring>

#include "engine/base/error.h"

namespace tessera::shell {

void PushRegistryTable(lua_State* L, const char* name) {
  PushTableField(L, LUA_REGISTRYINDEX, name);
}

void PushTableField(lua_State* L, int table, const char* name) {
  lua_getfield(L, table, name);
  if (lua_istable(L, -1)) return;
  lua_pop(L, 1);
  lua_newtable(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, table, name);
}

void PushStrings(lua_State* L, const std::vector<std::string>& strings) {
  lua_createtable(L, static_cast<int>(strings.size()), 0);
  for (size_t i = 0; i < strings.size(); ++i) {
    lua_pushlstring(L, strings[i].data(), strings[i].size());
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
}

void NewUserdataMeta(lua_State* L, const char* name, lua_CFunction gc,
                     std::initializer_list<LuaFunction> methods) {
  luaL_newmetatable(L, name);
  const int meta = lua_gettop(L);
  lua_newtable(L);
  SetFunctions(L, lua_gettop(L), methods);
  lua_setfield(L, meta, "__index");
  lua_pushcfunction(L, gc);
  lua_setfield(L, meta, "__gc");
  lua_pop(L, 1);
}

void SetStandInMetatable(lua_State* L, int meta, int methods, const char* type_name,
                         lua_CFunction keys) {
  lua_createtable(L, 0, keys ? 3 : 2);
  lua_pushvalue(L, methods);
  lua_setfield(L, -2, "__index");
  if (keys) {
    lua_pushcfunction(L, keys);
    lua_setfield(L, -2, "__keys");
  }
  lua_pushstring(L, type_name);
  lua_setfield(L, -2, "__name");
  lua_setfield(L, meta, "__metatable");
}

std::vector<std::string> CheckStrings(lua_State* L, int index, const char* what) {
  luaL_checktype(L, index, LUA_TTABLE);
  std::vector<std::string> out;
  const int n = static_cast<int>(lua_objlen(L, index));
  for (int i = 1; i <= n; ++i) {
    lua_rawgeti(L, index, i);
    if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "%s: item %d is not a string", what, i);
    out.emplace_back(lua_tostring(L, -1));
    lua_pop(L, 1);
  }
  return out;
}

void SetDoc(lua_State* L, int index, const char* doc) {
  index = index < 0 && index > LUA_REGISTRYINDEX ? lua_gettop(L) + index + 1 : index;
  // Docs are keyed by the value itself (see shell/lua/help.lua), weakly, so a
  // documented function is still collected when nothing else holds it.
  lua_getfield(L, LUA_REGISTRYINDEX, "tessera.docs");
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_newtable(L);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, "tessera.docs");
  }
  lua_pushvalue(L, index);
  lua_pushstring(L, doc);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

void SetFunctions(lua_State* L, int table, std::initializer_list<LuaFunction> fns) {
  table = table < 0 ? lua_gettop(L) + table + 1 : table;
  for (const LuaFunction& f : fns) {
    lua_pushcfunction(L, f.fn);
    if (f.doc) SetDoc(L, -1, f.doc);
    lua_setfield(L, table, f.name);
  }
}

int TracebackHandler(lua_State* L) {
  if (!lua_isstring(L, 1)) {
    // A non-string error: keep a table's __tostring, else describe it.
    if (luaL_callmeta(L, 1, "__tostring") && lua_isstring(L, -1)) return 1;
    lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  } else {
    lua_pushvalue(L, 1);
    // An error passed up through nested Lua ops carries the traceback of
    // where it was raised, which shows every frame above it: one is enough.
    if (std::strstr(lua_tostring(L, -1), "\nstack traceback:")) return 1;
  }
  luaL_traceback(L, L, lua_tostring(L, -1), 1);
  return 1;
}

int CallWithTraceback(lua_State* L, int nargs, int nresults) {
  int base = lua_gettop(L) - nargs;
  lua_pushcfunction(L, TracebackHandler);
  lua_insert(L, base);
  int status = lua_pcall(L, nargs, nresults, base);
  lua_remove(L, base);
  return status;
}

std::string ErrorText(lua_State* L, int index) {
  size_t n = 0;
  const char* s = lua_tolstring(L, index, &n);
  if (s) return std::string(s, n);
  return std::string("(error object is a ") + luaL_typename(L, index) + " value)";
}

std::string OutOfMemoryMessage(lua_State* L) {
  // The binding's name as the caller spelled it (mx.nd.zeros -> "zeros").
  // Else (a tail call hides it) the start of its documentation, which is
  // its usage ("a:totable() -> ...").
  lua_Debug ar;
  std::string name = "a tessera function";
  if (lua_getstack(L, 0, &ar) && lua_getinfo(L, "nf", &ar)) {
    if (ar.name) {
      name = ar.name;
    } else {
      lua_getfield(L, LUA_REGISTRYINDEX, "tessera.docs");
      if (lua_istable(L, -1)) {
        lua_pushvalue(L, -2);
        lua_rawget(L, -2);
        if (const char* doc = lua_tostring(L, -1)) {
          const std::string usage(doc);
          name = usage.substr(0, usage.find('('));
        }
        lua_pop(L, 1);
      }
      lua_pop(L, 1);
    }
    lua_pop(L, 1);  // the function
  }
  return name +
         ": out of memory: a host allocation failed (free arrays you no longer need, "
         "or make smaller ones)";
}

std::string CheckKey(lua_State* L, int index, std::string_view what) {
  if (lua_type(L, index) != LUA_TSTRING)
    TS_THROW << what << " must be a name (a string), got a " << luaL_typename(L, index);
  return CheckString(L, index, what);
}

bool HasNamedKeys(lua_State* L, int index) {
  lua_pushnil(L);
  while (lua_next(L, index) != 0) {
    if (lua_type(L, -2) == LUA_TSTRING) {
      lua_pop(L, 2);
      return true;
    }
    lua_pop(L, 1);
  }
  return false;
}

std::string CheckString(lua_State* L, int index, std::string_view what) {
  size_t n = 0;
  const bool is_text = lua_type(L, index) == LUA_TSTRING || lua_type(L, index) == LUA_TNUMBER;
  // An argument of the wrong type: Lua's own message ("bad argument #1 to
  // 'load' (string expected, got nil)").
  const char* s =
      is_text || index <= 0 ? lua_tolstring(L, index, &n) : luaL_checklstring(L, index, &n);
  if (!s) TS_THROW << what << " must be a string, got a " << luaL_typename(L, index);
  std::string text(s, n);
  if (text.find('\0') == std::string::npos) return text;
  std::string shown;
  for (char c : text) shown += c == '\0' ? std::string("\\0") : std::string(1, c);
  TS_THROW << what << " '" << shown
           << "' contains a NUL byte, which names, keys and paths cannot hold";
}

OpReqType CheckGradReq(lua_State* L, int index, const char* what) {
  if (lua_isnoneornil(L, index)) return kWriteTo;
  const std::string r = CheckString(L, index, std::string(what) + ": grad_req");
  if (r == "write") return kWriteTo;
  if (r == "add") return kAddTo;
  if (r == "null") return kNullOp;
  TS_THROW << what << ": grad_req must be 'write', 'add' or 'null', got '" << r << "'";
}

}  // namespace tessera::shell
