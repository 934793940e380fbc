// Small helpers every binding uses: C++ exceptions become Lua errors, calls
// carry a traceback, and functions are registered with their documentation.
#pragma once

#include <lua.hpp>

#include <exception>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/tblob.h"

namespace tessera::shell {

// The Lua thread running the innermost binding call on this OS thread (a
// coroutine when called from one), for C++ that calls back into Lua below a
// binding (custom op properties). Null outside bindings.
inline thread_local lua_State* tls_calling_state = nullptr;
struct CallingStateScope {
  explicit CallingStateScope(lua_State* L) : saved(tls_calling_state) { tls_calling_state = L; }
  ~CallingStateScope() { tls_calling_state = saved; }
  lua_State* saved;
};

// "<function>: out of memory ...", for a std::bad_alloc that escaped the
// binding running on `L` (its what() says only "std::bad_alloc").
std::string OutOfMemoryMessage(lua_State* L);

// Wraps a binding so that a C++ exception (tessera::Error or any other
// std::exception; std::bad_alloc as OutOfMemoryMessage) becomes a Lua error
// with the exception's message, raised
// after every C++ frame of `F` has unwound. Lua errors raised inside `F`
// (luaL_error) pass through untouched: on x86-64 LuaJIT unwinds them as
// foreign exceptions, which must never be swallowed by catch (...).
template <int (*F)(lua_State*)>
int Guarded(lua_State* L) {
  std::string msg;
  try {
    CallingStateScope calling(L);
    return F(L);
  } catch (const std::bad_alloc&) {
    msg = OutOfMemoryMessage(L);
  } catch (const std::exception& e) {
    msg = e.what();
  }
  lua_pushlstring(L, msg.data(), msg.size());
  return lua_error(L);
}

// The string at `index` whole, for Lua strings that become C++ names, keys,
// paths or option values. Lua strings may hold NUL bytes, which the C
// strings and files below would silently end at ('a\0b' saved as 'a'):
// such a string is an error naming `what` ("mx.nd.save: the name"). A
// number is taken as its text, as luaL_checkstring does; any other type is
// an error.
std::string CheckString(lua_State* L, int index, std::string_view what);

// A grad_req argument: 'write' (also when nil), 'add' or 'null'; an error
// names `what` and the value given.
OpReqType CheckGradReq(lua_State* L, int index, const char* what);
// The same for a key of a table being walked with lua_next: only a string
// (converting a number key in place would break the walk).
std::string CheckKey(lua_State* L, int index, std::string_view what);
// Whether the table at `index` (a positive index) has a string key: an op
// call's {a, b, dim = 1} holds parameters beside its inputs.
bool HasNamedKeys(lua_State* L, int index);

// A function of a binding table: the name, the guarded C function and the
// text `help()` shows.
struct LuaFunction {
  const char* name;
  lua_CFunction fn;
  const char* doc;
};

// Sets each function as a field of the table at `table` and records its doc.
void SetFunctions(lua_State* L, int table, std::initializer_list<LuaFunction> fns);
// Registers metatable `name` for userdata: `methods` under __index, `gc` as
// __gc. Leaves the stack as it was.
void NewUserdataMeta(lua_State* L, const char* name, lua_CFunction gc,
                     std::initializer_list<LuaFunction> methods);
// Makes getmetatable(x) of userdata with the metatable at `meta` answer
// a stand-in, for completion to read when __index is a function: a table
// whose __index is the table at `methods`, whose __name is `type_name` and,
// when `keys` is given, whose __keys lists the fields. `meta` and `methods`
// are absolute indices; leaves the stack as it was.
void SetStandInMetatable(lua_State* L, int meta, int methods, const char* type_name,
                         lua_CFunction keys = nullptr);
// Records `doc` for the value at `index` (any function or table).
void SetDoc(lua_State* L, int index, const char* doc);

// A message handler for lua_pcall: appends a traceback to string errors.
int TracebackHandler(lua_State* L);
// lua_pcall with TracebackHandler. On error the message is left on the stack.
int CallWithTraceback(lua_State* L, int nargs, int nresults);
// The error value at the top of the stack as text (pops nothing).
std::string ErrorText(lua_State* L, int index = -1);

// The table at registry[name], created empty if missing, pushed on the stack.
void PushRegistryTable(lua_State* L, const char* name);
// The table at t[name] for the table at absolute index `table`, created empty
// if missing, pushed on the stack (namespaces several bindings fill).
void PushTableField(lua_State* L, int table, const char* name);
// A Lua list of the strings.
void PushStrings(lua_State* L, const std::vector<std::string>& strings);
// The strings of the Lua list at `index`; anything else is an error naming
// `what` (and the item).
std::vector<std::string> CheckStrings(lua_State* L, int index, const char* what);

}  // namespace tessera::shell
