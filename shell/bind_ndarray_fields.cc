// mx.nd, part 9: what a.k means. __index looks k up among the methods, then
// the fields (shape, dtype, ctx, size, ndim, T, grad), then, for a number or
// a table, the rows of part 4, and last among the ops, so that any op is a
// method (a:sum{axis = 1}); fields cannot be set. The metatable a user sees
// through getmetatable(a) is a stand-in that lists methods and fields for
// completion.
#include <iterator>
#include <string_view>
#include <utility>

#include "bind_context.h"
#include "bind_ndarray.h"
#include "engine/autograd/autograd.h"
#include "lua_util.h"

namespace tessera::shell::nd {

namespace {

void PushShape(lua_State* L, const Shape& s) {
  lua_createtable(L, s.ndim(), 0);
  for (int i = 0; i < s.ndim(); ++i) {
    lua_pushnumber(L, static_cast<lua_Number>(s[i]));
    lua_rawseti(L, -2, i + 1);
  }
}

// Pushes field `k` of `a`; false when `k` is not a field.
bool PushField(lua_State* L, const NDArray& a, std::string_view k) {
  if (k == "shape") {
    PushShape(L, a.shape());
  } else if (k == "dtype") {
    lua_pushstring(L, DTypeName(a.dtype()));
  } else if (k == "ctx" || k == "context") {
    PushContext(L, a.ctx());
  } else if (k == "size") {
    lua_pushnumber(L, static_cast<lua_Number>(a.Size()));
  } else if (k == "ndim") {
    lua_pushinteger(L, a.ndim());
  } else if (k == "T") {
    InvokeAndPush(L, "transpose", {a}, {});
  } else if (k == "grad") {
    NDArray g = autograd::GetGrad(a);
    if (g.is_none())
      lua_pushnil(L);
    else
      PushNDArray(L, std::move(g), false);
  } else {
    return false;
  }
  return true;
}

constexpr const char* kFieldNames[] = {"shape", "dtype", "ctx", "context",
                                       "size",  "ndim",  "T",   "grad"};

// __index: methods (upvalue 1), then fields, then numbers and tables as
// indices, then registered ops as methods (a:sum{axis = 1}).
int NDIndex(lua_State* L) {
  NDArray& a = CheckNDArray(L, 1);
  if (lua_type(L, 2) == LUA_TSTRING) {
    size_t n = 0;
    const char* k = lua_tolstring(L, 2, &n);
    lua_pushvalue(L, 2);
    lua_rawget(L, lua_upvalueindex(1));
    if (!lua_isnil(L, -1)) return 1;
    lua_pop(L, 1);
    if (PushField(L, a, std::string_view(k, n))) return 1;
    // Any op is a method: mx.nd[k], which self then fills as first input.
    lua_pushvalue(L, 2);
    lua_gettable(L, lua_upvalueindex(2));
    return 1;
  }
  return Index(L, a, 2);
}

int NDNewIndex(lua_State* L) {
  NDArray& a = CheckNDArray(L, 1);
  if (lua_type(L, 2) == LUA_TSTRING)
    return luaL_error(L, "NDArray: cannot set field '%s' (assign elements with a[i] = x)",
                      lua_tostring(L, 2));
  NewIndex(L, a, 2, 3);
  return 0;
}

int NDLen(lua_State* L) {
  NDArray& a = CheckNDArray(L, 1);
  lua_pushnumber(L, a.ndim() ? static_cast<lua_Number>(a.shape()[0]) : 1);
  return 1;
}

int FieldKeys(lua_State* L) {
  lua_createtable(L, static_cast<int>(std::size(kFieldNames)), 0);
  int i = 0;
  for (const char* k : kFieldNames) {
    lua_pushstring(L, k);
    lua_rawseti(L, -2, ++i);
  }
  return 1;
}

}  // namespace

void OpenFields(lua_State* L, int meta, int methods, int nd) {
  // __index is a function (it serves a[i] and fields), so completion reads
  // the methods through getmetatable(a), which __metatable answers with a
  // stand-in whose __index is the methods table and whose __keys lists the
  // fields.
  SetStandInMetatable(L, meta, methods, "NDArray", FieldKeys);

  lua_pushvalue(L, methods);
  lua_pushvalue(L, nd);
  lua_pushcclosure(L, Guarded<NDIndex>, 2);
  lua_setfield(L, meta, "__index");
  SetFunctions(L, meta,
               {{"__newindex", Guarded<NDNewIndex>, nullptr}, {"__len", Guarded<NDLen>, nullptr}});
}

}  // namespace tessera::shell::nd
