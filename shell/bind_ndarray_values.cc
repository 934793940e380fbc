// mx.nd, part 8: an array's values in Lua: printing (__tostring),
// a:totable(), a:asscalar() and a:data_ptr(). They wait through the shell,
// so that queued Lua work keeps running: for the pending writes, or before
// data_ptr, through which the caller may write, for every pending use.
// Inside Lua work that holds the array (mx.engine.push) the engine has
// ordered it already: a CPU array is then read in place, without a wait.
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "bind_ndarray.h"
#include "engine/base/error.h"
#include "engine/ndarray/format.h"
#include "engine_wait.h"
#include "interpreter.h"
#include "lua_util.h"

namespace tessera::shell::nd {

namespace {

// True when Lua work running now (a function pushed with mx.engine.push) holds
// `var`: the engine has ordered it already, and a wait would wait for that
// work itself.
bool HeldByRunningWork(engine::VarHandle var, bool* writes) {
  bool held = false;
  *writes = false;
  for (const auto& run : Interpreter::Get()->running_work()) {
    for (engine::VarHandle v : *run.writes)
      if (v == var) held = *writes = true;
    for (engine::VarHandle v : *run.reads)
      if (v == var) held = true;
  }
  return held;
}

template <typename T>
void AppendAsDouble(const void* p, int64_t n, std::vector<double>* out) {
  const T* x = static_cast<const T*>(p);
  for (int64_t i = 0; i < n; ++i) out->push_back(static_cast<double>(static_cast<float>(x[i])));
}
template <typename T>
requires std::is_arithmetic_v<T>
void AppendArithmetic(const void* p, int64_t n, std::vector<double>* out) {
  const T* x = static_cast<const T*>(p);
  for (int64_t i = 0; i < n; ++i) out->push_back(static_cast<double>(x[i]));
}

// The values of a CPU array, read in place with no wait.
std::vector<double> ValuesInPlace(const NDArray& a) {
  std::vector<double> v;
  v.reserve(static_cast<size_t>(a.Size()));
  const void* p = a.data().dptr_;
  const int64_t n = a.Size();
  switch (a.dtype()) {
    case DType::kFloat32:
      AppendArithmetic<float>(p, n, &v);
      break;
    case DType::kFloat64:
      AppendArithmetic<double>(p, n, &v);
      break;
    case DType::kFloat16:
      AppendAsDouble<float16>(p, n, &v);
      break;
    case DType::kBFloat16:
      AppendAsDouble<bfloat16>(p, n, &v);
      break;
    case DType::kUint8:
      AppendArithmetic<uint8_t>(p, n, &v);
      break;
    case DType::kInt8:
      AppendArithmetic<int8_t>(p, n, &v);
      break;
    case DType::kInt32:
      AppendArithmetic<int32_t>(p, n, &v);
      break;
    case DType::kInt64:
      AppendArithmetic<int64_t>(p, n, &v);
      break;
    case DType::kBool:
      AppendArithmetic<bool>(p, n, &v);
      break;
    default:
      TS_THROW << "cannot read an array of dtype " << DTypeName(a.dtype());
  }
  return v;
}

// Every element as a double, after waiting (through the shell) for the
// writes pushed before; in place inside Lua work that holds the array.
std::vector<double> ReadValues(lua_State* L, const NDArray& a) {
  bool writes = false;
  if (a.ctx().is_cpu() && HeldByRunningWork(a.var(), &writes)) return ValuesInPlace(a);
  WaitForVar(L, a.var(), engine::WaitMode::kRead);
  return a.ToVector();
}

int NDToString(lua_State* L) {
  NDArray& a = CheckNDArray(L, 1);
  std::string s = a.is_none()
                      ? a.Footer() + "\n"
                      : FormatValues(ReadValues(L, a), a.shape(), a.dtype()) + a.Footer() + "\n";
  lua_pushlstring(L, s.data(), s.size());
  return 1;
}

void PushNested(lua_State* L, const std::vector<double>& v, const Shape& s, int axis, size_t* pos) {
  const auto n = static_cast<int>(s[axis]);
  lua_createtable(L, n, 0);
  for (int i = 1; i <= n; ++i) {
    if (axis + 1 == s.ndim())
      lua_pushnumber(L, v[(*pos)++]);
    else
      PushNested(L, v, s, axis + 1, pos);
    lua_rawseti(L, -2, i);
  }
}

int ToTable(lua_State* L) {
  NDArray& a = CheckNDArray(L, 1);
  std::vector<double> v = ReadValues(L, a);
  if (a.ndim() == 0) {
    lua_pushnumber(L, v.empty() ? 0 : v[0]);
    return 1;
  }
  size_t pos = 0;
  PushNested(L, v, a.shape(), 0, &pos);
  return 1;
}

int AsScalar(lua_State* L) {
  NDArray& a = CheckNDArray(L, 1);
  TS_CHECK(a.Size() == 1) << "asscalar: the array has " << a.Size() << " elements (shape "
                          << a.shape() << "), not 1";
  lua_pushnumber(L, ReadValues(L, a)[0]);
  return 1;
}

const char* CTypeOf(DType t) {
  switch (t) {
    case DType::kFloat32:
      return "float *";
    case DType::kFloat64:
      return "double *";
    case DType::kFloat16:
    case DType::kBFloat16:
      return "uint16_t *";
    case DType::kInt8:
      return "int8_t *";
    case DType::kUint8:
      return "uint8_t *";
    case DType::kInt32:
      return "int32_t *";
    case DType::kInt64:
      return "int64_t *";
    case DType::kBool:
      return "bool *";
    default:
      return "void *";
  }
}

void WaitForDataAccess(lua_State* L, engine::VarHandle var) {
  bool writes = false;
  if (HeldByRunningWork(var, &writes)) return;
  WaitForVar(L, var, engine::WaitMode::kWrite);
}

// The FFI cast lives in Lua: the C API cannot make a typed cdata. Loaded on
// first use so that start-up never loads the ffi module.
constexpr const char kCastChunk[] =
    "local ffi = require 'ffi'\n"
    "return function(p, ctype) return ffi.cast(ctype, p) end\n";

int DataPtr(lua_State* L) {
  NDArray& a = CheckNDArray(L, 1);
  TS_CHECK(a.ctx().is_cpu()) << "data_ptr: the array is on " << a.ctx().ToString()
                             << "; copy it to mx.cpu() first";
  // Inside a pushed Lua op that holds the array, the engine has already
  // ordered it (waiting would wait for the op itself); elsewhere wait for
  // every pending read and write, since the caller may write through it.
  WaitForDataAccess(L, a.var());
  void* p = static_cast<char*>(a.data().dptr_);
  lua_getfield(L, LUA_REGISTRYINDEX, "tessera.nd.ffi_cast");
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    if (luaL_loadbuffer(L, kCastChunk, sizeof kCastChunk - 1, "=nd.data_ptr") != 0)
      return lua_error(L);
    lua_call(L, 0, 1);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, "tessera.nd.ffi_cast");
  }
  lua_pushlightuserdata(L, p);
  lua_pushstring(L, CTypeOf(a.dtype()));
  lua_call(L, 2, 1);
  return 1;
}

}  // namespace

void OpenValues(lua_State* L, int meta, int methods) {
  SetFunctions(
      L, methods,
      {{"totable", Guarded<ToTable>, "a:totable() -> the values as nested Lua tables"},
       {"asscalar", Guarded<AsScalar>, "a:asscalar() -> the value of a one-element array"},
       {"data_ptr", Guarded<DataPtr>,
        "a:data_ptr() -> an FFI pointer (float*, double*, int32_t*, ...) to a's first element, "
        "after waiting for every pending use of a. UNSAFE: valid only while a is alive and no "
        "op writes a; indices are 0-based; cpu arrays only."}});
  SetFunctions(L, meta, {{"__tostring", Guarded<NDToString>, nullptr}});
}

}  // namespace tessera::shell::nd
