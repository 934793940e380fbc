// mx.nd, part 3: making arrays. mx.nd.array from Lua tables, and the
// creation functions (zeros, ones, full, empty, arange, eye, random.*), which
// are thin fronts over the registered creation ops: positional arguments
// named after the op's parameters, then an options table. mx.random.seed.
#include <cmath>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "bind_context.h"
#include "bind_ndarray.h"
#include "engine/base/error.h"
#include "engine/op/op.h"
#include "engine/resource/resource.h"
#include "engine_wait.h"
#include "lua_util.h"

namespace tessera::shell::nd {
namespace {

// ---- mx.nd.array

// The sizes along the first items of nested tables. It stops one level past
// the most an array can have, so a table that contains itself (t[1] = t)
// ends in the caller's "too many levels" error, not a stack overflow.
void ShapeOf(lua_State* L, int index, std::vector<int64_t>* dims) {
  const int n = static_cast<int>(lua_objlen(L, index));
  dims->push_back(n);
  if (n == 0 || dims->size() > static_cast<size_t>(Shape::kMaxNdim)) return;
  lua_rawgeti(L, index, 1);
  if (lua_istable(L, -1)) ShapeOf(L, lua_gettop(L), dims);
  lua_pop(L, 1);
}

// Flattens the nested table at `index` (axis `axis` of `dims`) into `out`,
// checking that it is rectangular.
void Flatten(lua_State* L, int index, const std::vector<int64_t>& dims, size_t axis,
             std::vector<double>* out) {
  const int n = static_cast<int>(lua_objlen(L, index));
  TS_CHECK(n == dims[axis]) << "array: ragged nested table: a row on axis " << axis + 1 << " has "
                            << n << " items, expected " << dims[axis];
  for (int i = 1; i <= n; ++i) {
    lua_rawgeti(L, index, i);
    if (axis + 1 < dims.size()) {
      TS_CHECK(lua_istable(L, -1))
          << "array: ragged nested table: item " << i << " on axis " << axis + 1 << " is a "
          << luaL_typename(L, -1) << ", expected a table";
      Flatten(L, lua_gettop(L), dims, axis + 1, out);
    } else if (lua_type(L, -1) == LUA_TNUMBER) {
      out->push_back(lua_tonumber(L, -1));
    } else if (lua_type(L, -1) == LUA_TBOOLEAN) {
      out->push_back(lua_toboolean(L, -1) ? 1 : 0);
    } else {
      TS_THROW << "array: item " << i << " on axis " << axis + 1 << " is a " << luaL_typename(L, -1)
               << ", expected a number";
    }
    lua_pop(L, 1);
  }
}

// The dtype and ctx of an options table (absent: float32 on cpu(0)).
void ReadDTypeCtx(lua_State* L, int opts, DType* dtype, Context* ctx) {
  if (lua_isnoneornil(L, opts)) return;
  luaL_checktype(L, opts, LUA_TTABLE);
  lua_getfield(L, opts, "dtype");
  if (!lua_isnil(L, -1)) *dtype = DTypeFromName(CheckString(L, -1, "dtype"));
  lua_getfield(L, opts, "ctx");
  *ctx = OptContext(L, -1, *ctx);
  lua_pop(L, 2);
}

int Array(lua_State* L) {
  DType dtype = DType::kFloat32;
  Context ctx = Context::CPU();
  if (NDArray* src = ToNDArray(L, 1)) {
    dtype = src->dtype();
    ctx = src->ctx();
    ReadDTypeCtx(L, 2, &dtype, &ctx);
    NDArray a = src->CopyTo(ctx);
    PushNDArray(L, dtype == a.dtype() ? a : a.AsType(dtype));
    return 1;
  }
  ReadDTypeCtx(L, 2, &dtype, &ctx);
  std::vector<int64_t> dims;
  std::vector<double> values;
  if (lua_type(L, 1) == LUA_TNUMBER || lua_type(L, 1) == LUA_TBOOLEAN) {
    dims.push_back(1);
    values.push_back(lua_type(L, 1) == LUA_TNUMBER ? lua_tonumber(L, 1) : lua_toboolean(L, 1));
  } else if (lua_istable(L, 1)) {
    ShapeOf(L, 1, &dims);
    TS_CHECK(dims.size() <= static_cast<size_t>(Shape::kMaxNdim))
        << "array: " << dims.size() << " levels of nesting, at most " << Shape::kMaxNdim;
    Flatten(L, 1, dims, 0, &values);
  } else {
    return luaL_error(L, "array: expected nested tables of numbers, a number or an NDArray, got %s",
                      luaL_typename(L, 1));
  }
  // Staged as float64 on the host so every Lua number converts exactly once,
  // by the same cast the Cast op uses.
  NDArray host(Shape(dims), Context::CPU(), DType::kFloat64);
  if (!values.empty()) host.SyncCopyFromCPU(values.data(), values.size());
  NDArray a = dtype == DType::kFloat64 ? host : host.AsType(dtype);
  if (ctx != Context::CPU()) a = a.CopyTo(ctx);
  PushNDArray(L, a);
  return 1;
}

// ---- Creation ops.

// A shape given to a creation function, as text for the op. MXNet's shapes
// use 0 for "unknown", which an array to make cannot have: said here, with
// the shape the user typed, rather than by the op's inference ("cannot
// infer the output shape").
std::string CreationShape(lua_State* L, int index, const char* fname) {
  const std::string what = std::string("mx.nd.") + fname;
  const Shape s = CheckShape(L, index, what.c_str());
  if (s.ndim() == 0)
    TS_THROW << what << ": shape is required: a table of sizes such as {2, 3}, got {}";
  for (int i = 0; i < s.ndim(); ++i)
    TS_CHECK(s[i] > 0) << what << ": shape " << ShapeText(s) << " has a 0 at axis " << i + 1
                       << "; every size must be at least 1";
  return ShapeText(s);
}

// Upvalues: 1 the function's name, 2 the op's name, 3 a list of the
// parameter names that positional arguments fill. A trailing table that is
// not in a positional slot meant for a shape holds the other parameters.
int Create(lua_State* L) {
  const char* fname = lua_tostring(L, lua_upvalueindex(1));
  const char* opname = lua_tostring(L, lua_upvalueindex(2));
  const op::Op* op = op::Op::Find(opname);
  TS_CHECK(op) << "mx.nd." << fname << ": operator " << opname
               << " is not registered in this build";
  const int npos = static_cast<int>(lua_objlen(L, lua_upvalueindex(3)));
  int top = lua_gettop(L);
  int opts = 0;
  if (top >= 1 && lua_istable(L, top) && lua_objlen(L, top) == 0 && !ToNDArray(L, top))
    opts = top--;
  TS_CHECK(top <= npos) << "mx.nd." << fname << ": at most " << npos
                        << " positional arguments, got " << top;
  op::ParamDict params;
  for (int i = 1; i <= top; ++i) {
    if (lua_isnil(L, i)) continue;
    lua_rawgeti(L, lua_upvalueindex(3), i);
    std::string key = lua_tostring(L, -1);
    lua_pop(L, 1);
    params[key] = key == "shape" ? CreationShape(L, i, fname) : ParamText(L, i, false, fname, key);
  }
  int out_index = 0;
  if (opts) {
    lua_pushnil(L);
    while (lua_next(L, opts) != 0) {
      if (lua_type(L, -2) != LUA_TSTRING)
        luaL_error(L, "mx.nd.%s: option keys must be names, got a %s", fname, luaL_typename(L, -2));
      std::string key = CheckKey(L, -2, std::string("mx.nd.") + fname + ": an option");
      if (key == "out") {
        lua_pop(L, 1);
        continue;
      }
      params[key] = key == "shape" ? CreationShape(L, lua_gettop(L), fname)
                                   : ParamText(L, -1, false, fname, key);
      lua_pop(L, 1);
    }
    lua_getfield(L, opts, "out");
    if (!lua_isnil(L, -1)) out_index = lua_gettop(L);
  }
  // zeros, ones, full, empty: the shape comes first and has no default.
  lua_rawgeti(L, lua_upvalueindex(3), 1);
  const bool shape_first =
      lua_type(L, -1) == LUA_TSTRING && std::string_view(lua_tostring(L, -1)) == "shape";
  lua_pop(L, 1);
  if (shape_first && !out_index && !params.contains("shape")) {
    // An empty table alone reads as the options; the user meant a shape.
    bool empty_opts = false;
    if (opts && top == 0) {
      lua_pushnil(L);
      empty_opts = lua_next(L, opts) == 0;
      if (!empty_opts) lua_pop(L, 2);
    }
    TS_THROW << "mx.nd." << fname << ": shape is required: a table of sizes such as {2, 3}, got "
             << (top >= 1     ? luaL_typename(L, 1)
                 : empty_opts ? "{}"
                              : "nothing");
  }
  if (out_index) {
    NDArray& o = CheckNDArray(L, out_index, "out");
    std::vector<NDArray> out{o};
    if (!params.contains("shape") && FindShapeParam(op)) params["shape"] = ShapeText(o.shape());
    if (!params.contains("dtype")) params["dtype"] = DTypeName(o.dtype());
    if (!params.contains("ctx")) params["ctx"] = o.ctx().ToString();
    InvokeAndPush(L, opname, {}, std::move(params), &out);
    lua_pushvalue(L, out_index);
    return 1;
  }
  return InvokeAndPush(L, opname, {}, std::move(params));
}

void AddCreator(lua_State* L, int table, const char* fname, const char* opname,
                std::initializer_list<const char*> positional, const char* doc) {
  lua_pushstring(L, fname);
  lua_pushstring(L, opname);
  lua_createtable(L, static_cast<int>(positional.size()), 0);
  int i = 0;
  for (const char* p : positional) {
    lua_pushstring(L, p);
    lua_rawseti(L, -2, ++i);
  }
  lua_pushcclosure(L, Guarded<Create>, 3);
  SetDoc(L, -1, doc);
  lua_setfield(L, table, fname);
}

int Seed(lua_State* L) {
  TS_CHECK(lua_type(L, 1) == LUA_TNUMBER)
      << "mx.random.seed: the seed must be a number, got a " << luaL_typename(L, 1);
  const lua_Number n = lua_tonumber(L, 1);
  // Every whole number a double holds exactly; NaN, fractions and negatives
  // have no meaning as a seed (and casting them to an integer is undefined).
  TS_CHECK(n >= 0 && n <= 9007199254740992.0 && n == std::floor(n))
      << "mx.random.seed: the seed must be a whole number from 0 to 2^53, got "
      << (std::isnan(n) ? std::string("nan") : (std::ostringstream() << n).str());
  if (lua_isnoneornil(L, 2))
    resource::ResourceManager::Get()->SeedRandom(static_cast<uint64_t>(n));
  else
    resource::ResourceManager::Get()->SeedRandom(CheckContext(L, 2, "seed"),
                                                 static_cast<uint64_t>(n));
  return 0;
}

int WaitAll(lua_State* L) {
  WaitForAll(L);
  return 0;
}

}  // namespace

bool FindShapeParam(const op::Op* op) {
  for (const op::FieldInfo& f : op->params())
    if (f.name == "shape") return true;
  return false;
}

void OpenCreation(lua_State* L, int mx, int nd) {
  SetFunctions(
      L, nd,
      {{"array", Guarded<Array>,
        "mx.nd.array({{1, 2}, {3, 4}}, {dtype = 'float32', ctx = mx.cpu()}) -> an "
        "array from nested tables (or a number, or a copy of an NDArray)"},
       {"waitall", Guarded<WaitAll>, "mx.nd.waitall() -> waits for all pushed work (mx.waitall)"}});
  AddCreator(L, nd, "zeros", "_zeros", {"shape"},
             "mx.nd.zeros({2, 3}, {dtype = 'float32', ctx = mx.cpu(), out = a}) -> zeros");
  AddCreator(L, nd, "ones", "_ones", {"shape"}, "mx.nd.ones({2, 3}, {dtype, ctx, out}) -> ones");
  AddCreator(L, nd, "full", "_full", {"shape", "value"},
             "mx.nd.full({2, 3}, value, {dtype, ctx, out}) -> every element `value`");
  AddCreator(L, nd, "empty", "_empty", {"shape"},
             "mx.nd.empty({2, 3}, {dtype, ctx}) -> an array with undefined contents");
  AddCreator(L, nd, "arange", "_arange", {"start", "stop", "step"},
             "mx.nd.arange(start, stop, step, {repeat, dtype, ctx}) -> start, start + step, ... "
             "below stop (values, not positions: mx.nd.arange(0, 3) is 0 1 2)");
  AddCreator(L, nd, "eye", "_eye", {"N", "M", "k"},
             "mx.nd.eye(N, M, k, {dtype, ctx}) -> N x M (default N) with ones on diagonal k");

  lua_createtable(L, 0, 8);
  const int random = lua_gettop(L);
  SetDoc(L, random,
         "mx.nd.random: uniform, normal, randint, exponential, gamma, poisson, "
         "negative_binomial, generalized_negative_binomial (mx.random.seed(n) seeds them)");
  AddCreator(L, random, "uniform", "_random_uniform", {"low", "high", "shape"},
             "mx.nd.random.uniform(low, high, {shape}, {dtype, ctx, out}) -> samples of "
             "U[low, high)");
  AddCreator(L, random, "normal", "_random_normal", {"loc", "scale", "shape"},
             "mx.nd.random.normal(loc, scale, {shape}, {dtype, ctx, out}) -> samples of "
             "N(loc, scale^2)");
  AddCreator(L, random, "randint", "_random_randint", {"low", "high", "shape"},
             "mx.nd.random.randint(low, high, {shape}, {dtype, ctx, out}) -> integers in "
             "[low, high)");
  AddCreator(L, random, "exponential", "_random_exponential", {"lam", "shape"},
             "mx.nd.random.exponential(lam, {shape}, {dtype, ctx, out}) -> samples of an "
             "exponential distribution with rate lam");
  AddCreator(L, random, "gamma", "_random_gamma", {"alpha", "beta", "shape"},
             "mx.nd.random.gamma(alpha, beta, {shape}, {dtype, ctx, out}) -> samples of a gamma "
             "distribution with shape alpha and scale beta");
  AddCreator(L, random, "poisson", "_random_poisson", {"lam", "shape"},
             "mx.nd.random.poisson(lam, {shape}, {dtype, ctx, out}) -> Poisson samples of mean "
             "lam");
  AddCreator(L, random, "negative_binomial", "_random_negative_binomial", {"k", "p", "shape"},
             "mx.nd.random.negative_binomial(k, p, {shape}, {dtype, ctx, out}) -> failures "
             "before the k-th success, success probability p");
  AddCreator(L, random, "generalized_negative_binomial", "_random_generalized_negative_binomial",
             {"mu", "alpha", "shape"},
             "mx.nd.random.generalized_negative_binomial(mu, alpha, {shape}, {dtype, ctx, out}) "
             "-> samples of mean mu and variance mu + alpha mu^2");
  lua_pushvalue(L, random);
  lua_setfield(L, nd, "random");

  // mx.random: the seed, and the samplers under MXNet's other names.
  lua_getfield(L, mx, "random");
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, mx, "random");
  }
  const int mxrandom = lua_gettop(L);
  SetDoc(L, mxrandom,
         "mx.random: seed(n), uniform, normal, randint, exponential, gamma, poisson, "
         "negative_binomial, generalized_negative_binomial");
  SetFunctions(L, mxrandom,
               {{"seed", Guarded<Seed>,
                 "mx.random.seed(n[, ctx]) -> seeds the random generators of every device (or "
                 "of ctx), so the ops pushed after it draw the same numbers on every run"}});
  for (const char* name : {"uniform", "normal", "randint", "exponential", "gamma", "poisson",
                           "negative_binomial", "generalized_negative_binomial"}) {
    lua_getfield(L, random, name);
    lua_setfield(L, mxrandom, name);
  }
  lua_settop(L, random - 1);
}

}  // namespace tessera::shell::nd
