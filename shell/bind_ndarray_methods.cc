// mx.nd, part 7: the methods that make new arrays or views from an array or
// wait for it: reshape and slice (views), copy, copyto, as_in_context and
// astype (copies, pushed on the engine), wait_to_read and wait_to_write.
#include <cstdint>
#include <vector>

#include "bind_context.h"
#include "bind_ndarray.h"
#include "engine/autograd/autograd.h"
#include "engine/base/error.h"
#include "engine_wait.h"
#include "lua_util.h"

namespace tessera::shell::nd {

namespace {

int Reshape(lua_State* L) {
  NDArray& a = CheckNDArray(L, 1);
  std::vector<int64_t> spec;
  if (lua_istable(L, 2)) {
    int n = static_cast<int>(lua_objlen(L, 2));
    for (int i = 1; i <= n; ++i) {
      lua_rawgeti(L, 2, i);
      spec.push_back(CheckWholeNumber(luaL_checknumber(L, -1), "reshape", "code", i));
      lua_pop(L, 1);
    }
  } else {
    for (int i = 2; i <= lua_gettop(L); ++i)
      spec.push_back(CheckWholeNumber(luaL_checknumber(L, i), "reshape", "code", i - 1));
  }
  PushNDArray(L, autograd::ReshapeWithRecord(a, spec), false);
  return 1;
}

// 1-based position on an axis of length n (negative: from the end) -> 0-based.
int64_t Position(lua_State* L, lua_Number i, int64_t n, const char* what) {
  auto k = static_cast<int64_t>(i);
  if (static_cast<lua_Number>(k) != i) luaL_error(L, "%s: index %f is not an integer", what, i);
  int64_t p = k > 0 ? k - 1 : n + k;
  if (k == 0 || p < 0 || p >= n)
    luaL_error(L, "%s: index %d out of range for a first axis of length %d (indices are 1-based)",
               what, static_cast<int>(k), static_cast<int>(n));
  return p;
}

int SliceMethod(lua_State* L) {
  NDArray& a = CheckNDArray(L, 1);
  TS_CHECK(a.ndim() > 0) << "slice: the array has no axis";
  const int64_t n = a.shape()[0];
  int64_t b = Position(L, luaL_checknumber(L, 2), n, "slice");
  int64_t e = lua_isnoneornil(L, 3) ? n - 1 : Position(L, luaL_checknumber(L, 3), n, "slice");
  TS_CHECK(e >= b) << "slice: end " << e + 1 << " is before begin " << b + 1;
  PushNDArray(L, autograd::SliceWithRecord(a, b, e + 1), false);
  return 1;
}

int Copy(lua_State* L) {
  NDArray& a = CheckNDArray(L, 1);
  PushNDArray(L, a.CopyTo(a.ctx()));
  return 1;
}

int CopyTo(lua_State* L) {
  NDArray& a = CheckNDArray(L, 1);
  if (NDArray* b = ToNDArray(L, 2)) {
    TS_CHECK(b->shape() == a.shape() && b->dtype() == a.dtype())
        << "copyto: source is " << DTypeName(a.dtype()) << " " << a.shape() << ", target is "
        << DTypeName(b->dtype()) << " " << b->shape();
    CopyFromTo(a, *b);
    lua_settop(L, 2);
    return 1;
  }
  PushNDArray(L, a.CopyTo(CheckContext(L, 2, "copyto")));
  return 1;
}

int AsInContext(lua_State* L) {
  NDArray& a = CheckNDArray(L, 1);
  Context ctx = CheckContext(L, 2, "as_in_context");
  if (ctx == a.ctx()) {
    lua_settop(L, 1);
    return 1;
  }
  PushNDArray(L, a.CopyTo(ctx));
  return 1;
}

int AsType(lua_State* L) {
  NDArray& a = CheckNDArray(L, 1);
  DType t = DTypeFromName(CheckString(L, 2, "astype: dtype"));
  PushNDArray(L, a.AsType(t));
  return 1;
}

int WaitToRead(lua_State* L) {
  WaitForVar(L, CheckNDArray(L, 1).var(), engine::WaitMode::kRead);
  lua_settop(L, 1);
  return 1;
}

int WaitToWrite(lua_State* L) {
  WaitForVar(L, CheckNDArray(L, 1).var(), engine::WaitMode::kWrite);
  lua_settop(L, 1);
  return 1;
}

}  // namespace

void OpenMethods(lua_State* L, int methods) {
  SetFunctions(
      L, methods,
      {{"reshape", Guarded<Reshape>,
        "a:reshape({d1, d2, ...}) or a:reshape(d1, d2, ...) -> a view with MXNet's codes (0 "
        "keep, -1 infer, -2 rest, -3 merge two, -4 split)"},
       {"slice", Guarded<SliceMethod>,
        "a:slice(b, e) -> view of rows b..e of the first axis (1-based, inclusive; negative "
        "from the end)"},
       {"copy", Guarded<Copy>, "a:copy() -> a new array with the same values"},
       {"copyto", Guarded<CopyTo>,
        "a:copyto(ctx | b) -> a copy on ctx, or copies a into b (same shape and dtype) and "
        "returns b"},
       {"as_in_context", Guarded<AsInContext>,
        "a:as_in_context(ctx) -> a itself when on ctx, else a copy there"},
       {"astype", Guarded<AsType>, "a:astype('float64') -> a converted copy"},
       {"wait_to_read", Guarded<WaitToRead>,
        "a:wait_to_read() -> waits until every pending write of a has finished; raises the "
        "error of a failed op a depends on"},
       {"wait_to_write", Guarded<WaitToWrite>,
        "a:wait_to_write() -> waits until every pending read and write of a has finished"}});
}

}  // namespace tessera::shell::nd
