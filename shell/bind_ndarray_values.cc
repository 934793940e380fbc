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

// How arrays print (mx.nd.set_printoptions); the interpreter thread only.
FormatOptions g_print_options;

int NDToString(lua_State* L) {
  NDArray& a = CheckNDArray(L, 1);
  std::string s = a.is_none()
                      ? a.Footer() + "\n"
                      : FormatValues(ReadValues(L, a), a.shape(), a.dtype(), g_print_options) +
                            a.Footer() + "\n";
  lua_pushlstring(L, s.data(), s.size());
  return 1;
}

void SetIntField(lua_State* L, const char* key, int64_t value) {
  lua_pushnumber(L, static_cast<lua_Number>(value));
  lua_setfield(L, -2, key);
}

// An option of set_printoptions: a whole number in [lo, hi], or unchanged.
void ReadOption(lua_State* L, int opts, const char* key, int64_t lo, int64_t hi, int64_t* out) {
  lua_getfield(L, opts, key);
  if (!lua_isnil(L, -1)) {
    const lua_Number x = lua_tonumber(L, -1);
    if (!lua_isnumber(L, -1) || x != static_cast<lua_Number>(static_cast<int64_t>(x)) || x < lo ||
        x > hi)
      luaL_error(L, "set_printoptions: %s must be a whole number in %d..%d", key,
                 static_cast<int>(lo), static_cast<int>(hi));
    *out = static_cast<int64_t>(x);
  }
  lua_pop(L, 1);
}

// mx.nd.set_printoptions{threshold =, edgeitems =, precision =, linewidth =}
// -> the options before, as a table (pass it back to restore them).
int SetPrintOptions(lua_State* L) {
  FormatOptions before = g_print_options, next = g_print_options;
  if (!lua_isnoneornil(L, 1)) {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, 1) != 0) {
      lua_pop(L, 1);
      const char* k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "?";
      const std::string key = k;
      if (key != "threshold" && key != "edgeitems" && key != "precision" && key != "linewidth")
        luaL_error(L,
                   "set_printoptions: unknown option '%s' (threshold, edgeitems, precision, "
                   "linewidth)",
                   key.c_str());
    }
    int64_t precision = next.precision, width = next.line_width;
    ReadOption(L, 1, "threshold", 0, int64_t{1} << 50, &next.threshold);
    ReadOption(L, 1, "edgeitems", 1, 1000, &next.edge_items);
    ReadOption(L, 1, "precision", 0, 16, &precision);
    ReadOption(L, 1, "linewidth", 20, 100000, &width);
    next.precision = static_cast<int>(precision);
    next.line_width = static_cast<int>(width);
  }
  g_print_options = next;
  lua_createtable(L, 0, 4);
  SetIntField(L, "threshold", before.threshold);
  SetIntField(L, "edgeitems", before.edge_items);
  SetIntField(L, "precision", before.precision);
  SetIntField(L, "linewidth", before.line_width);
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

void OpenValues(lua_State* L, int meta, int methods, int nd) {
  SetFunctions(L, nd,
               {{"set_printoptions", Guarded<SetPrintOptions>,
                 "mx.nd.set_printoptions{threshold = 1000, edgeitems = 3, precision = 4, "
                 "linewidth = 80} -> the options before. Arrays of more than `threshold` "
                 "elements print summarised: `edgeitems` at each end of an axis and `...` "
                 "between (as NumPy); `precision` digits after the point; matrices wider "
                 "than `linewidth` print in column blocks"}});
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
