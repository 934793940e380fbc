// mx.nd, part 4: indexing. a[i] is row i of the first axis and a[{b, e}]
// rows b..e, both 1-based and inclusive as Lua ranges are, negatives from the
// end; both are views (writes through them reach a). a[i] = x and
// a[{b, e}] = x write a number or an array into that view with an op pushed
// on the engine, so assignment is as asynchronous as everything else.
#include <cstdio>
#include <string>
#include <vector>

#include "bind_ndarray.h"
#include "engine/autograd/autograd.h"
#include "engine/base/error.h"
#include "engine/ndarray/imperative.h"

namespace tessera::shell::nd {
namespace {

int64_t ZeroBased(lua_State* L, int index, int64_t n) {
  if (lua_type(L, index) != LUA_TNUMBER)
    luaL_error(L, "NDArray index: expected a number, got %s", luaL_typename(L, index));
  const lua_Number x = lua_tonumber(L, index);
  const auto k = static_cast<int64_t>(x);
  TS_CHECK(static_cast<lua_Number>(k) == x) << "NDArray index: " << x << " is not an integer";
  const int64_t p = k > 0 ? k - 1 : n + k;
  TS_CHECK(k != 0 && p >= 0 && p < n)
      << "NDArray index " << k << " out of range for a first axis of length " << n
      << " (indices are 1-based; negative ones count from the end)";
  return p;
}

// The view that `key` selects; `record`: recorded under autograd (reads;
// an assignment's target is not).
NDArray ViewOf(lua_State* L, const NDArray& a, int key, bool record) {
  TS_CHECK(a.ndim() > 0) << "NDArray index: the array has no axis to index";
  const int64_t n = a.shape()[0];
  if (lua_type(L, key) == LUA_TNUMBER) {
    const int64_t i = ZeroBased(L, key, n);
    return record ? autograd::AtWithRecord(a, i) : a.At(i);
  }
  if (lua_istable(L, key)) {
    const int len = static_cast<int>(lua_objlen(L, key));
    TS_CHECK(len == 1 || len == 2)
        << "NDArray index: a range is {first, last} (inclusive) or {first}, got " << len
        << " items";
    lua_rawgeti(L, key, 1);
    const int64_t b = ZeroBased(L, -1, n);
    lua_pop(L, 1);
    int64_t e = n - 1;
    if (len == 2) {
      lua_rawgeti(L, key, 2);
      e = ZeroBased(L, -1, n);
      lua_pop(L, 1);
    }
    TS_CHECK(e >= b) << "NDArray index: range {" << b + 1 << ", " << e + 1
                     << "} ends before it begins";
    return record ? autograd::SliceWithRecord(a, b, e + 1) : a.Slice(b, e + 1);
  }
  luaL_error(L, "NDArray index: expected a number or a range {first, last}, got %s",
             luaL_typename(L, key));
  return {};
}

}  // namespace

int Index(lua_State* L, const NDArray& a, int key) {
  PushNDArray(L, ViewOf(L, a, key, true), false);
  return 1;
}

void NewIndex(lua_State* L, const NDArray& a, int key, int value) {
  NDArray view = ViewOf(L, a, key, false);
  std::vector<NDArray> out{view};
  if (lua_type(L, value) == LUA_TNUMBER) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", static_cast<double>(lua_tonumber(L, value)));
    InvokeAndPush(L, "_full", {},
                  {{"shape", ShapeText(view.shape())},
                   {"value", buf},
                   {"dtype", DTypeName(view.dtype())},
                   {"ctx", view.ctx().ToString()}},
                  &out);
    return;
  }
  NDArray* src = ToNDArray(L, value);
  if (!src)
    luaL_error(L, "NDArray assignment: the value must be a number or an NDArray, got %s",
               luaL_typename(L, value));
  NDArray from = *src;
  if (from.ctx() != view.ctx()) from = from.CopyTo(view.ctx());
  if (from.dtype() != view.dtype()) from = from.AsType(view.dtype());
  if (from.shape() == view.shape()) {
    CopyFromTo(from, view);
  } else if (from.Size() == view.Size()) {
    CopyFromTo(from.Reshape(view.shape()), view);
  } else {
    // Anything else must broadcast to the view, as in NumPy and MXNet's
    // __setitem__: missing leading axes count as 1.
    if (from.ndim() < view.ndim()) {
      std::vector<int64_t> dims(view.ndim() - from.ndim(), 1);
      for (int i = 0; i < from.ndim(); ++i) dims.push_back(from.shape()[i]);
      from = from.Reshape(Shape(dims));
    }
    InvokeAndPush(L, "broadcast_to", {from}, {{"shape", ShapeText(view.shape())}}, &out);
  }
}

}  // namespace tessera::shell::nd
