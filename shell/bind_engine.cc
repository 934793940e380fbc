// mx.engine: variables, pushing Lua functions, waits, engine type and stats.
#include "bind_engine.h"

#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "bind_context.h"
#include "bindings.h"
#include "engine/base/error.h"
#include "engine/ndarray/check_numerics.h"
#include "engine_wait.h"
#include "interpreter.h"
#include "lua_util.h"
#include "lua_work.h"

namespace tessera::shell {
namespace {

using engine::Engine;
using engine::EngineType;
using engine::VarHandle;

constexpr const char* kVarMeta = "tessera.engine.Var";

struct VarBox {
  VarHandle var;
};

bool VarFromUserdata(lua_State* L, int index, VarHandle* var) {
  auto* box = static_cast<VarBox*>(luaL_testudata(L, index, kVarMeta));
  if (!box || !box->var) return false;
  *var = box->var;
  return true;
}

int NewVar(lua_State* L) {
  auto* box = static_cast<VarBox*>(lua_newuserdata(L, sizeof(VarBox)));
  box->var = nullptr;
  luaL_setmetatable(L, kVarMeta);
  box->var = Engine::Get()->NewVariable();
  return 1;
}

int VarGc(lua_State* L) {
  auto* box = static_cast<VarBox*>(luaL_checkudata(L, 1, kVarMeta));
  if (box->var) Engine::Get()->DeleteVariable({}, Context::CPU(), box->var);
  box->var = nullptr;
  return 0;
}

int VarToString(lua_State* L) {
  VarHandle v = CheckVar(L, 1, "self");
  lua_pushfstring(L, "engine.Var(%p, version %d)", static_cast<void*>(v),
                  static_cast<int>(Engine::VarVersion(v)));
  return 1;
}

int VarVersion(lua_State* L) {
  lua_pushnumber(L, static_cast<lua_Number>(Engine::VarVersion(CheckVar(L, 1, "self"))));
  return 1;
}

// The variables of opts[field]: a list of vars (or var-like objects).
std::vector<VarHandle> VarsField(lua_State* L, int opts, const char* field) {
  std::vector<VarHandle> vars;
  if (lua_isnoneornil(L, opts)) return vars;
  lua_getfield(L, opts, field);
  if (VarHandle single = ToVar(L, -1)) {
    vars.push_back(single);  // a lone variable for a list of one
  } else if (!lua_isnil(L, -1)) {
    if (!lua_istable(L, -1)) luaL_error(L, "push: '%s' must be a list of variables", field);
    int n = static_cast<int>(lua_objlen(L, -1));
    for (int i = 1; i <= n; ++i) {
      lua_rawgeti(L, -1, i);
      VarHandle v = ToVar(L, -1);
      if (!v)
        luaL_error(L, "push: %s[%d] is a %s, not an engine variable", field, i,
                   luaL_typename(L, -1));
      vars.push_back(v);
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  return vars;
}

struct PushOptions {
  std::vector<VarHandle> reads, writes;
  std::string name;
  Context ctx = Context::CPU();
  int priority = 0;
};

PushOptions ReadPushOptions(lua_State* L, int opts) {
  if (!lua_isnoneornil(L, opts)) luaL_checktype(L, opts, LUA_TTABLE);
  PushOptions o;
  o.reads = VarsField(L, opts, "read");
  o.writes = VarsField(L, opts, "write");
  if (lua_isnoneornil(L, opts)) return o;
  lua_getfield(L, opts, "name");
  if (!lua_isnil(L, -1)) o.name = CheckString(L, -1, "mx.engine.push: name");
  lua_getfield(L, opts, "ctx");
  o.ctx = OptContext(L, -1, Context::CPU());
  lua_getfield(L, opts, "priority");
  o.priority = static_cast<int>(luaL_optinteger(L, -1, 0));
  lua_pop(L, 3);
  return o;
}

// In the naive engine a push runs before it returns, so a push from inside a
// running Lua op onto a variable that op holds would wait for the op itself.
void CheckNaiveNesting(const PushOptions& o) {
  if (Engine::Get()->type() != EngineType::kNaive) return;
  auto has = [](const std::vector<VarHandle>* list, VarHandle v) {
    for (VarHandle x : *list)
      if (x == v) return true;
    return false;
  };
  for (const auto& run : Interpreter::Get()->running_work()) {
    for (VarHandle v : o.writes)
      TS_CHECK(!has(run.reads, v) && !has(run.writes, v))
          << "push: with the naive engine, an op pushed from inside op '" << run.name
          << "' cannot use a variable that op uses (it would wait for the op itself)";
    for (VarHandle v : o.reads)
      TS_CHECK(!has(run.writes, v))
          << "push: with the naive engine, an op pushed from inside op '" << run.name
          << "' cannot read a variable that op writes (it would wait for the op itself)";
  }
}

int Push(lua_State* L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  PushOptions o = ReadPushOptions(L, 2);
  CheckNaiveNesting(o);
  if (o.name.empty()) o.name = DescribeFunction(L, 1);
  auto work = LuaWork::Create(L, 1, o.name, o.reads, o.writes);
  Engine::Get()->PushAsync(
      [work](RunContext, engine::CallbackOnComplete done) {
        work->Run(nullptr, [done](std::exception_ptr e) { e ? done(e) : done(); });
      },
      o.ctx, o.reads, o.writes, engine::FnProperty::kNormal, o.priority, work->name());
  return 0;
}

// Test helpers: C++ ops, for checking how Lua ops and C++ ops order.
// The C++ ops of the tests: `fn` pushed with the options at argument 2.
int PushTestOp(lua_State* L, engine::SyncFn fn, const char* default_name) {
  PushOptions o = ReadPushOptions(L, 2);
  Engine::Get()->PushSync(std::move(fn), o.ctx, o.reads, o.writes, engine::FnProperty::kNormal,
                          o.priority, Engine::InternName(o.name.empty() ? default_name : o.name));
  return 0;
}

int SleepOp(lua_State* L) {
  auto d = std::chrono::duration<double>(luaL_checknumber(L, 1));
  return PushTestOp(
      L, [d](RunContext) { std::this_thread::sleep_for(d); }, "sleep");
}

int FailOp(lua_State* L) {
  size_t n = 0;
  const char* text = luaL_checklstring(L, 1, &n);
  return PushTestOp(
      L, [msg = std::string(text, n)](RunContext) { throw Error(msg); }, "fail");
}

int WaitVar(lua_State* L) {
  VarHandle v = CheckVar(L, 1, "wait_for_var");
  auto mode = engine::WaitMode::kRead;
  if (!lua_isnoneornil(L, 2)) {
    std::string m = CheckString(L, 2, "wait_for_var: mode");
    TS_CHECK(m == "read" || m == "write")
        << "wait_for_var: mode must be 'read' or 'write', not '" << m << "'";
    if (m == "write") mode = engine::WaitMode::kWrite;
  }
  WaitForVar(L, v, mode);
  return 0;
}

int WaitAll(lua_State* L) {
  WaitForAll(L);
  return 0;
}

int SetType(lua_State* L) {
  std::string t = CheckString(L, 1, "set_type: the engine type");
  TS_CHECK(t == "naive" || t == "threaded")
      << "set_type: engine type must be 'naive' or 'threaded', not '" << t << "'";
  // Engine::SetType waits for the running engine inside the engine; serve
  // Lua work first so that wait cannot be stuck on it.
  WaitForAll(L);
  Engine::SetType(t == "naive" ? EngineType::kNaive : EngineType::kThreaded);
  return 0;
}

int Type(lua_State* L) {
  lua_pushstring(L, Engine::Get()->type() == EngineType::kNaive ? "naive" : "threaded");
  return 1;
}

int Stats(lua_State* L) {
  engine::EngineStats s = Engine::Get()->Stats();
  lua_createtable(L, 0, 3);
  lua_pushlstring(L, s.type.data(), s.type.size());
  lua_setfield(L, -2, "type");
  lua_pushnumber(L, static_cast<lua_Number>(s.pending));
  lua_setfield(L, -2, "pending");
  lua_createtable(L, static_cast<int>(s.lanes.size()), 0);
  int i = 0;
  for (const engine::LaneStats& lane : s.lanes) {
    lua_createtable(L, 0, 5);
    std::string ctx = lane.ctx.ToString();
    lua_pushlstring(L, ctx.data(), ctx.size());
    lua_setfield(L, -2, "ctx");
    lua_pushlstring(L, lane.lane.data(), lane.lane.size());
    lua_setfield(L, -2, "lane");
    lua_pushinteger(L, lane.workers);
    lua_setfield(L, -2, "workers");
    lua_pushnumber(L, static_cast<lua_Number>(lane.queued));
    lua_setfield(L, -2, "queued");
    lua_pushnumber(L, static_cast<lua_Number>(lane.running));
    lua_setfield(L, -2, "running");
    lua_rawseti(L, -2, ++i);
  }
  lua_setfield(L, -2, "lanes");
  return 1;
}

// A count argument: a whole number >= 0, or nil to keep `current`.
int64_t BoundArg(lua_State* L, int i, const char* what, int64_t current) {
  if (lua_isnoneornil(L, i)) return current;
  TS_CHECK(lua_type(L, i) == LUA_TNUMBER)
      << "set_max_inflight: " << what << " must be a number, got " << luaL_typename(L, i);
  const double v = lua_tonumber(L, i);
  TS_CHECK(v >= 0 && v <= 9.2e18 && v == std::floor(v))
      << "set_max_inflight: " << what << " must be a whole number >= 0 (0: no bound), got "
      << lua_tostring(L, i);
  return static_cast<int64_t>(v);
}

int PushBound(lua_State* L, const engine::InflightBound& b) {
  for (int64_t v : {b.ops, b.host_bytes, b.gpu_bytes})
    lua_pushnumber(L, static_cast<lua_Number>(v));
  return 3;
}

int SetMaxInflight(lua_State* L) {
  const engine::InflightBound old = Engine::Get()->MaxInflight();
  Engine::Get()->SetMaxInflight({BoundArg(L, 1, "ops", old.ops),
                                 BoundArg(L, 2, "bytes", old.host_bytes),
                                 BoundArg(L, 3, "gpu_bytes", old.gpu_bytes)});
  return PushBound(L, old);
}

int MaxInflight(lua_State* L) {
  return PushBound(L, Engine::Get()->MaxInflight());
}

// mx.engine.set_check_numerics(on) -> the previous setting
int SetCheckNumerics(lua_State* L) {
  luaL_checkany(L, 1);
  const bool before = opcall::CheckNumericsOn();
  opcall::SetCheckNumerics(lua_toboolean(L, 1));
  lua_pushboolean(L, before);
  return 1;
}

int CheckNumerics(lua_State* L) {
  lua_pushboolean(L, opcall::CheckNumericsOn());
  return 1;
}

void Open(lua_State* L, int mx) {
  luaL_newmetatable(L, kVarMeta);
  lua_pushcfunction(L, VarGc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, Guarded<VarToString>);
  lua_setfield(L, -2, "__tostring");
  lua_newtable(L);
  SetFunctions(L, -1,
               {{"version", Guarded<VarVersion>,
                 "var:version() -> the number of writes of var that have finished"}});
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  RegisterVarSource(VarFromUserdata);

  lua_newtable(L);
  SetDoc(L, -1,
         "mx.engine: the dependency engine. Functions pushed with the variables they read "
         "and write run asynchronously, in an order that respects those variables.");
  SetFunctions(
      L, -1,
      {{"new_var", Guarded<NewVar>,
        "mx.engine.new_var() -> a fresh engine variable: a token standing for whatever the "
        "functions pushed with it touch"},
       {"push", Guarded<Push>,
        "mx.engine.push(fn, {read = {vars}, write = {vars}, name = 'op', ctx = mx.cpu(), "
        "priority = 0})\n"
        "Runs fn() after every function pushed before that writes a variable in `read`, or "
        "uses one in `write`. Returns at once. fn runs on the interpreter thread when it "
        "next waits, sits at the prompt, or between statements; an error in fn poisons the "
        "variables in `write` and is raised, naming the op, at the next wait."},
       {"wait_for_var", Guarded<WaitVar>,
        "mx.engine.wait_for_var(var, mode = 'read') -> waits until every write of var "
        "pushed before has finished ('write': every use); raises the error of a failed op "
        "that var depends on"},
       {"wait_for_all", Guarded<WaitAll>,
        "mx.engine.wait_for_all() -> waits for everything pushed; raises the first error "
        "not yet reported"},
       {"set_type", Guarded<SetType>,
        "mx.engine.set_type('naive' | 'threaded') -> waits for all work, then switches "
        "engine. The naive engine runs each push before it returns."},
       {"type", Guarded<Type>, "mx.engine.type() -> 'threaded' or 'naive'"},
       {"stats", Guarded<Stats>,
        "mx.engine.stats() -> {type, pending, lanes = {{ctx, lane, workers, queued, "
        "running}, ...}}"},
       {"set_max_inflight", Guarded<SetMaxInflight>,
        "mx.engine.set_max_inflight(ops [, bytes [, gpu_bytes]]) -> the previous ops, bytes, "
        "gpu_bytes: pushes wait while `ops` ops are in flight or the new arrays of the ops in "
        "flight on the CPU pass `bytes` (on GPUs: `gpu_bytes`) (0: no bound of that kind; nil "
        "keeps it)"},
       {"max_inflight", Guarded<MaxInflight>,
        "mx.engine.max_inflight() -> ops, bytes, gpu_bytes: the run-ahead bound"},
       {"set_check_numerics", Guarded<SetCheckNumerics>,
        "mx.engine.set_check_numerics(on) -> the previous setting. On: every op checks the "
        "float values it wrote, and the first that writes a NaN or an infinity fails (raised "
        "at the next wait) naming the op, its node, the output and element, and which of its "
        "inputs were already non-finite; a gradient op names its forward op. Also "
        "TESSERA_CHECK_NUMERICS=1 and tessera --check-numerics. Costs one pass over every "
        "output; CPU arrays only for now"},
       {"check_numerics", Guarded<CheckNumerics>,
        "mx.engine.check_numerics() -> whether ops check their outputs for NaN and Inf"},
       {"_sleep", Guarded<SleepOp>,
        "mx.engine._sleep(seconds, {read, write, name}) -> pushes a C++ op that sleeps "
        "(for tests)"},
       {"_fail", Guarded<FailOp>,
        "mx.engine._fail(message, {read, write, name}) -> pushes a C++ op that throws "
        "(for tests)"}});
  lua_setfield(L, mx, "engine");
}

}  // namespace

VarHandle CheckVar(lua_State* L, int index, const char* what) {
  VarHandle v = ToVar(L, index);
  if (!v) luaL_error(L, "%s: expected an engine variable, got %s", what, luaL_typename(L, index));
  return v;
}

TESSERA_SHELL_BINDING(engine, 20, Open);

}  // namespace tessera::shell
