// mx.nd, part 1: the NDArray userdata (fields, methods, Lua operators), GC
// pacing, and the opener that assembles mx.nd from the other files.
#include "bind_ndarray.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "bind_context.h"
#include "bindings.h"
#include "engine/autograd/autograd.h"
#include "engine/base/error.h"
#include "engine/ndarray/format.h"
#include "engine/ndarray/imperative.h"
#include "engine/op/op_attr_types.h"
#include "engine/scheduler/object_pool.h"
#include "engine_wait.h"
#include "interpreter.h"
#include "lua_util.h"

namespace tessera::shell::nd {

// The NDArray metatable of the interpreter's state: its address, to tell an
// NDArray from other userdata without looking the name up, and a registry
// reference to set it on new arrays.
const void* g_meta = nullptr;
int g_meta_ref = LUA_NOREF;

namespace {

// ---- GC pacing.
//
// The GC sees only the small userdata, not the tensor memory behind it, so a
// loop that drops a 100 MB array per iteration would otherwise outrun it by
// orders of magnitude. LuaJIT 2.1 has no size hint for userdata, so the
// binding reports tensor allocations itself: every byte of new tensor memory
// advances the collector as if Lua had allocated it (LUA_GCSTEP takes KB).
// Small arrays are batched so the hot path of scalar arithmetic does not call
// into the collector each time.
size_t g_live_bytes = 0;
size_t g_gc_debt = 0;
constexpr size_t kGcBatchBytes = 256 << 10;

void AccountAlloc(lua_State* L, size_t bytes) {
  g_live_bytes += bytes;
  g_gc_debt += bytes;
  if (g_gc_debt < kGcBatchBytes) return;
  const size_t kb = g_gc_debt >> 10;
  g_gc_debt = 0;
  lua_gc(L, LUA_GCSTEP, static_cast<int>(std::min<size_t>(kb, 1u << 30)));
}

// ---- Telling NDArrays from other values.
//
// Every operator call checks each argument's metatable, and the finalizer
// checks its own: through the API that is three calls and a stack push per
// check, a tenth of a Lua `a + b` on small arrays. LuaJIT keeps a full
// userdata's metatable in the header right before its payload, at an offset
// fixed by its build. FindMetaOffset finds that offset on the running LuaJIT
// and proves it with two metatables and none; where the proof fails (another
// layout), the offset stays 0 and every check goes through the API.
ptrdiff_t g_meta_offset = 0;

const void* WordBefore(const void* payload, ptrdiff_t offset) {
  const void* w;
  std::memcpy(&w, static_cast<const char*>(payload) - offset, sizeof w);
  return w;
}

void FindMetaOffset(lua_State* L) {
  g_meta_offset = 0;
  const int top = lua_gettop(L);
  void* with[2];
  const void* metas[2];
  for (int i = 0; i < 2; ++i) {
    with[i] = lua_newuserdata(L, sizeof(void*));
    lua_newtable(L);
    metas[i] = lua_topointer(L, -1);
    lua_setmetatable(L, -2);
  }
  const void* without = lua_newuserdata(L, sizeof(void*));
  ptrdiff_t found = 0;
  int matches = 0;
  // Only offsets inside the header of the GC64 LuaJIT the interpreter
  // requires (48 bytes, the field 16 before the payload): no read leaves
  // the object.
  for (ptrdiff_t off = sizeof(void*); off <= 32; off += sizeof(void*)) {
    if (WordBefore(with[0], off) == metas[0] && WordBefore(with[1], off) == metas[1] &&
        WordBefore(without, off) == nullptr) {
      found = off;
      ++matches;
    }
  }
  lua_settop(L, top);
  if (matches == 1) g_meta_offset = found;
}

// The box slot of the NDArray userdata at `index`, or nullptr.
NDBox** BoxSlot(lua_State* L, int index) {
  if (g_meta_offset && lua_type(L, index) == LUA_TUSERDATA) {
    void* p = lua_touserdata(L, index);
    if (WordBefore(p, g_meta_offset) == g_meta) return static_cast<NDBox**>(p);
  }
  void* p = lua_touserdata(L, index);
  if (!p || !lua_getmetatable(L, index)) return nullptr;
  const bool ours = lua_topointer(L, -1) == g_meta;
  lua_pop(L, 1);
  if (ours) return static_cast<NDBox**>(p);
  // Not the metatable recorded last: by name (another state's arrays).
  return static_cast<NDBox**>(luaL_testudata(L, index, kNDArrayMeta));
}

int NDGc(lua_State* L) {
  NDBox** slot = BoxSlot(L, 1);
  if (!slot) luaL_checkudata(L, 1, kNDArrayMeta);  // raises
  // The slot is cleared: a finalized array (reachable again only through a
  // weak table or another finalizer) is no NDArray any more.
  if (NDBox* box = std::exchange(*slot, nullptr)) {
    g_live_bytes -= box->accounted;
    engine::ObjectPool<NDBox>::Delete(box);
  }
  return 0;
}

// ---- Reading values.

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

// ---- Fields.

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

// __index: fields, then methods (upvalue 1), then numbers and tables as
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

int NDToString(lua_State* L) {
  NDArray& a = CheckNDArray(L, 1);
  std::string s = a.is_none()
                      ? a.Footer() + "\n"
                      : FormatValues(ReadValues(L, a), a.shape(), a.dtype()) + a.Footer() + "\n";
  lua_pushlstring(L, s.data(), s.size());
  return 1;
}

int NDLen(lua_State* L) {
  NDArray& a = CheckNDArray(L, 1);
  lua_pushnumber(L, a.ndim() ? static_cast<lua_Number>(a.shape()[0]) : 1);
  return 1;
}

// ---- Arithmetic.

std::string NumberText(lua_Number x) {
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  if (std::isnan(x)) return "nan";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", static_cast<double>(x));
  return buf;
}

// One Lua operator: the op for two arrays, and the scalar ops for
// array-op-number and number-op-array.
struct ArithOp {
  const char* symbol;
  const char* binary;
  const char* scalar;
  const char* rscalar;
};

// The parsed attributes of `op_name` (a scalar op) with `scalar` x, kept for
// the last few (op, value) pairs: a loop's `a * 2 + 1` parses each once,
// and Invoke's inference memo then knows the attributes object again. Keyed
// by the name's address (the ArithOp tables' literals) and the bits of x.
std::shared_ptr<const op::NodeAttrs> ScalarAttrs(const char* op_name, lua_Number x) {
  struct Entry {
    const char* op = nullptr;
    uint64_t bits = 0;
    std::shared_ptr<const op::NodeAttrs> attrs;
  };
  static Entry cache[16];
  const auto bits = std::bit_cast<uint64_t>(x);
  Entry& e = cache[(reinterpret_cast<uintptr_t>(op_name) ^ bits ^ (bits >> 29)) % 16];
  if (e.op != op_name || e.bits != bits || !e.attrs) {
    auto attrs = MakeAttrs(op_name, {{"scalar", NumberText(x)}});  // may throw: entry unchanged
    e = {op_name, bits, std::move(attrs)};
  }
  return e.attrs;
}

int Arith(lua_State* L, const ArithOp& op, const std::shared_ptr<const op::NodeAttrs>& binary) {
  NDArray* a = ToNDArray(L, 1);
  NDArray* b = ToNDArray(L, 2);
  if (a && b) {
    // By reference: the Lua arguments hold both arrays for the call.
    const NDArray* args[] = {a, b};
    return InvokeAndPush(L, binary, InputList(args, 2));
  }
  if (a && lua_type(L, 2) == LUA_TNUMBER)
    return InvokeAndPush(L, ScalarAttrs(op.scalar, lua_tonumber(L, 2)), InputList(&a, 1));
  if (b && lua_type(L, 1) == LUA_TNUMBER)
    return InvokeAndPush(L, ScalarAttrs(op.rscalar, lua_tonumber(L, 1)), InputList(&b, 1));
  return luaL_error(L, "NDArray %s: operands must be NDArrays or numbers, got %s and %s", op.symbol,
                    a ? "NDArray" : luaL_typename(L, 1), b ? "NDArray" : luaL_typename(L, 2));
}

constexpr ArithOp kAdd{"+", "broadcast_add", "_plus_scalar", "_plus_scalar"};
constexpr ArithOp kSub{"-", "broadcast_sub", "_minus_scalar", "_rminus_scalar"};
constexpr ArithOp kMul{"*", "broadcast_mul", "_mul_scalar", "_mul_scalar"};
constexpr ArithOp kDiv{"/", "broadcast_div", "_div_scalar", "_rdiv_scalar"};
constexpr ArithOp kMod{"%", "broadcast_mod", "_mod_scalar", "_rmod_scalar"};
constexpr ArithOp kPow{"^", "broadcast_power", "_power_scalar", "_rpower_scalar"};
constexpr ArithOp kEq{"eq", "broadcast_equal", "_equal_scalar", "_equal_scalar"};
constexpr ArithOp kNe{"ne", "broadcast_not_equal", "_not_equal_scalar", "_not_equal_scalar"};
constexpr ArithOp kLt{"lt", "broadcast_lesser", "_lesser_scalar", "_greater_scalar"};
constexpr ArithOp kLe{"le", "broadcast_lesser_equal", "_lesser_equal_scalar",
                      "_greater_equal_scalar"};
constexpr ArithOp kGt{"gt", "broadcast_greater", "_greater_scalar", "_lesser_scalar"};
constexpr ArithOp kGe{"ge", "broadcast_greater_equal", "_greater_equal_scalar",
                      "_lesser_equal_scalar"};

template <const ArithOp& Op>
int ArithFn(lua_State* L) {
  // The two-array form has no parameters: parsed once.
  static const auto binary = MakeAttrs(Op.binary);
  return Arith(L, Op, binary);
}

int Unm(lua_State* L) {
  return InvokeAndPush(L, "negative", {CheckNDArray(L, 1)}, {});
}

// a:add_(x): a = a + x, written into a's memory; returns a.
template <const ArithOp& Op>
int InPlace(lua_State* L) {
  NDArray& a = CheckNDArray(L, 1);
  std::vector<NDArray> out{a};
  if (NDArray* b = ToNDArray(L, 2)) {
    InvokeAndPush(L, Op.binary, {a, *b}, {}, &out);
  } else {
    lua_Number x = luaL_checknumber(L, 2);
    InvokeAndPush(L, Op.scalar, {a}, {{"scalar", NumberText(x)}}, &out);
  }
  lua_settop(L, 1);
  return 1;
}

// ---- Methods.

int Reshape(lua_State* L) {
  NDArray& a = CheckNDArray(L, 1);
  std::vector<int64_t> spec;
  if (lua_istable(L, 2)) {
    int n = static_cast<int>(lua_objlen(L, 2));
    for (int i = 1; i <= n; ++i) {
      lua_rawgeti(L, 2, i);
      spec.push_back(static_cast<int64_t>(luaL_checknumber(L, -1)));
      lua_pop(L, 1);
    }
  } else {
    for (int i = 2; i <= lua_gettop(L); ++i)
      spec.push_back(static_cast<int64_t>(luaL_checknumber(L, i)));
  }
  PushNDArray(L, a.Reshape(spec), false);
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
  PushNDArray(L, a.Slice(b, e + 1), false);
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

int IsNDArray(lua_State* L) {
  lua_pushboolean(L, ToNDArray(L, 1) != nullptr);
  return 1;
}

int LiveBytes(lua_State* L) {
  lua_pushnumber(L, static_cast<lua_Number>(g_live_bytes));
  return 1;
}

bool VarOfNDArray(lua_State* L, int index, engine::VarHandle* var) {
  NDArray* a = ToNDArray(L, index);
  if (!a || a->is_none()) return false;
  *var = a->var();
  return true;
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

void Open(lua_State* L, int mx) {
  lua_newtable(L);
  const int nd = lua_gettop(L);
  SetDoc(L, nd,
         "mx.nd: NDArrays. mx.nd.array(t), zeros, ones, full, empty, arange, eye, "
         "random.uniform/normal/randint; every registered operator as mx.nd.<op>(inputs..., "
         "{params}); save, load, waitall. Indices and axes are 1-based.");

  luaL_newmetatable(L, kNDArrayMeta);
  const int meta = lua_gettop(L);
  // Recorded for this state; a reference left by a closed earlier state
  // means nothing here and is not released.
  g_meta = lua_topointer(L, meta);
  FindMetaOffset(L);
  lua_pushvalue(L, meta);
  g_meta_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_newtable(L);
  const int methods = lua_gettop(L);
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
       {"totable", Guarded<ToTable>, "a:totable() -> the values as nested Lua tables"},
       {"asscalar", Guarded<AsScalar>, "a:asscalar() -> the value of a one-element array"},
       {"wait_to_read", Guarded<WaitToRead>,
        "a:wait_to_read() -> waits until every pending write of a has finished; raises the "
        "error of a failed op a depends on"},
       {"wait_to_write", Guarded<WaitToWrite>,
        "a:wait_to_write() -> waits until every pending read and write of a has finished"},
       {"data_ptr", Guarded<DataPtr>,
        "a:data_ptr() -> an FFI pointer (float*, double*, int32_t*, ...) to a's first element, "
        "after waiting for every pending use of a. UNSAFE: valid only while a is alive and no "
        "op writes a; indices are 0-based; cpu arrays only."},
       {"eq", Guarded<ArithFn<kEq>>, "a:eq(b | x) -> 1 where equal, else 0"},
       {"ne", Guarded<ArithFn<kNe>>, "a:ne(b | x) -> 1 where not equal"},
       {"lt", Guarded<ArithFn<kLt>>, "a:lt(b | x) -> 1 where a < b"},
       {"le", Guarded<ArithFn<kLe>>, "a:le(b | x) -> 1 where a <= b"},
       {"gt", Guarded<ArithFn<kGt>>, "a:gt(b | x) -> 1 where a > b"},
       {"ge", Guarded<ArithFn<kGe>>, "a:ge(b | x) -> 1 where a >= b"},
       {"add_", Guarded<InPlace<kAdd>>, "a:add_(b | x) -> a, after a = a + b in place"},
       {"sub_", Guarded<InPlace<kSub>>, "a:sub_(b | x) -> a, after a = a - b in place"},
       {"mul_", Guarded<InPlace<kMul>>, "a:mul_(b | x) -> a, after a = a * b in place"},
       {"div_", Guarded<InPlace<kDiv>>, "a:div_(b | x) -> a, after a = a / b in place"}});

  // __index is a function (it serves a[i] and fields), so completion reads
  // the methods through getmetatable(a), which __metatable answers with a
  // stand-in whose __index is the methods table and whose __keys lists the
  // fields.
  lua_createtable(L, 0, 3);
  lua_pushvalue(L, methods);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, FieldKeys);
  lua_setfield(L, -2, "__keys");
  lua_pushliteral(L, "NDArray");
  lua_setfield(L, -2, "__name");
  lua_setfield(L, meta, "__metatable");

  lua_pushvalue(L, methods);
  lua_pushvalue(L, nd);
  lua_pushcclosure(L, Guarded<NDIndex>, 2);
  lua_setfield(L, meta, "__index");
  const LuaFunction metamethods[] = {
      {"__newindex", Guarded<NDNewIndex>, nullptr}, {"__tostring", Guarded<NDToString>, nullptr},
      {"__len", Guarded<NDLen>, nullptr},           {"__add", Guarded<ArithFn<kAdd>>, nullptr},
      {"__sub", Guarded<ArithFn<kSub>>, nullptr},   {"__mul", Guarded<ArithFn<kMul>>, nullptr},
      {"__div", Guarded<ArithFn<kDiv>>, nullptr},   {"__mod", Guarded<ArithFn<kMod>>, nullptr},
      {"__pow", Guarded<ArithFn<kPow>>, nullptr},   {"__unm", Guarded<Unm>, nullptr}};
  for (const LuaFunction& f : metamethods) {
    lua_pushcfunction(L, f.fn);
    lua_setfield(L, meta, f.name);
  }
  lua_pushcfunction(L, NDGc);
  lua_setfield(L, meta, "__gc");
  lua_settop(L, nd);

  SetFunctions(L, nd,
               {{"is_ndarray", Guarded<IsNDArray>, "mx.nd.is_ndarray(x) -> true for an NDArray"},
                {"_live_bytes", Guarded<LiveBytes>,
                 "mx.nd._live_bytes() -> tensor bytes held by live Lua NDArrays (GC pacing)"}});
  OpenCreation(L, mx, nd);
  OpenIO(L, nd);
  OpenOps(L, nd);  // last: it sets the metatable that serves mx.nd.<op>
  lua_setfield(L, mx, "nd");
  RegisterVarSource(VarOfNDArray);
}

}  // namespace

void PushNDArray(lua_State* L, NDArray arr, bool owns_memory) {
  const size_t bytes = owns_memory && arr.chunk() ? arr.chunk()->bytes : 0;
  // The userdata first: should Lua fail to allocate it, nothing is owned yet.
  auto** slot = static_cast<NDBox**>(lua_newuserdata(L, sizeof(NDBox*)));
  *slot = nullptr;
  lua_rawgeti(L, LUA_REGISTRYINDEX, g_meta_ref);
  lua_setmetatable(L, -2);
  *slot = engine::ObjectPool<NDBox>::New(std::move(arr), bytes);
  if (bytes) AccountAlloc(L, bytes);
}

NDArray* ToNDArray(lua_State* L, int index) {
  NDBox** slot = BoxSlot(L, index);
  return slot && *slot ? &(*slot)->arr : nullptr;
}

NDArray& CheckNDArray(lua_State* L, int index, const char* what) {
  NDArray* a = ToNDArray(L, index);
  if (!a) luaL_error(L, "%s: expected an NDArray, got %s", what, luaL_typename(L, index));
  return *a;
}

size_t LiveTensorBytes() {
  return g_live_bytes;
}

namespace {

// The output vector of an operator call, reused by later calls at the same
// nesting depth (inference may run Lua that calls operators again), so that
// a call allocates none. Empty again when the scope ends: the arrays must
// not outlive the call.
class OutputScratch {
 public:
  OutputScratch() {
    if (depth_ == stack_.size()) stack_.push_back(std::make_unique<std::vector<NDArray>>());
    v_ = stack_[depth_++].get();
  }
  ~OutputScratch() {
    v_->clear();
    --depth_;
  }
  OutputScratch(const OutputScratch&) = delete;
  OutputScratch& operator=(const OutputScratch&) = delete;
  std::vector<NDArray>& get() { return *v_; }

 private:
  static thread_local std::vector<std::unique_ptr<std::vector<NDArray>>> stack_;
  static thread_local size_t depth_;
  std::vector<NDArray>* v_;
};
thread_local std::vector<std::unique_ptr<std::vector<NDArray>>> OutputScratch::stack_;
thread_local size_t OutputScratch::depth_ = 0;

}  // namespace

int InvokeAndPush(lua_State* L, const std::shared_ptr<const op::NodeAttrs>& attrs, InputList inputs,
                  std::vector<NDArray>* out) {
  if (out) {
    Invoke(attrs, inputs, out);
    return 0;
  }
  OutputScratch scratch;
  std::vector<NDArray>& outputs = scratch.get();
  Invoke(attrs, inputs, &outputs);
  static const auto& visible = op::Op::GetAttr<op::FNumVisibleOutputs>("FNumVisibleOutputs");
  size_t n = outputs.size();
  if (const auto* f = visible.find(attrs->op)) n = std::min<size_t>(n, (*f)(*attrs));
  luaL_checkstack(L, static_cast<int>(n) + 4, "too many outputs");
  for (size_t i = 0; i < n; ++i) PushNDArray(L, std::move(outputs[i]));
  return static_cast<int>(n);
}

int InvokeAndPush(lua_State* L, std::string_view op_name, const std::vector<NDArray>& inputs,
                  op::ParamDict params, std::vector<NDArray>* out) {
  return InvokeAndPush(L, MakeAttrs(op_name, std::move(params)), inputs, out);
}

TESSERA_SHELL_BINDING(ndarray, 40, Open);

}  // namespace tessera::shell::nd
