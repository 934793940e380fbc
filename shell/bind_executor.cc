// mx.sym, part 5: binding symbols to arrays. The C++ half: mx.sym._bind,
// mx.sym._simple_bind and the executor userdata; shell/lua/executor.lua
// wraps it in the Lua API (sym:simple_bind{...}, sym:bind{...}, exe.outputs,
// exe.arg_dict, exe:forward{...}, exe:backward(...), exe:reshape{...}).
#include <map>
#include <memory>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "bind_context.h"
#include "bind_ndarray.h"
#include "bind_symbol.h"
#include "engine/base/error.h"
#include "engine/graph/executor.h"
#include "lua_util.h"

namespace tessera::shell::sym {

using graph::Executor;

namespace {

constexpr const char* kExecutorMeta = "tessera.Executor";

struct ExeBox {
  std::unique_ptr<Executor> exe;
  int monitor_ref = LUA_NOREF;  // the Lua monitor callback, in the registry
};

// The Lua state running forward/backward: a monitor callback runs inside
// them, on that state (which may be a coroutine's).
thread_local lua_State* tls_running = nullptr;

struct RunningState {
  explicit RunningState(lua_State* L) : before(tls_running) { tls_running = L; }
  ~RunningState() { tls_running = before; }
  lua_State* before;
};

void PushExecutor(lua_State* L, std::unique_ptr<Executor> exe) {
  auto* box = static_cast<ExeBox*>(lua_newuserdata(L, sizeof(ExeBox)));
  new (box) ExeBox{std::move(exe)};
  luaL_getmetatable(L, kExecutorMeta);
  lua_setmetatable(L, -2);
}

Executor& CheckExecutor(lua_State* L, int index) {
  auto* box = static_cast<ExeBox*>(luaL_checkudata(L, index, kExecutorMeta));
  if (!box->exe) luaL_error(L, "executor: already released");
  return *box->exe;
}

int ExeGc(lua_State* L) {
  auto* box = static_cast<ExeBox*>(luaL_checkudata(L, 1, kExecutorMeta));
  box->exe.reset();
  luaL_unref(L, LUA_REGISTRYINDEX, box->monitor_ref);
  box->monitor_ref = LUA_NOREF;
  return 0;
}

// e:set_monitor_callback(fn | nil, all): fn(name, array) after each node.
int SetMonitor(lua_State* L) {
  auto* box = static_cast<ExeBox*>(luaL_checkudata(L, 1, kExecutorMeta));
  if (!box->exe) luaL_error(L, "executor: already released");
  if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TFUNCTION);
  luaL_unref(L, LUA_REGISTRYINDEX, box->monitor_ref);
  box->monitor_ref = LUA_NOREF;
  if (lua_isnoneornil(L, 2)) {
    box->exe->SetMonitorCallback(nullptr, false);
    return 0;
  }
  lua_pushvalue(L, 2);
  const int ref = luaL_ref(L, LUA_REGISTRYINDEX);
  box->monitor_ref = ref;
  box->exe->SetMonitorCallback(
      [ref](const std::string& name, const NDArray& array) {
        lua_State* S = tls_running;
        TS_CHECK(S) << "monitor callback: forward or backward was not called from Lua";
        lua_rawgeti(S, LUA_REGISTRYINDEX, ref);
        lua_pushlstring(S, name.data(), name.size());
        nd::PushNDArray(S, array, false);
        if (CallWithTraceback(S, 2, 0) != 0) {
          std::string err = ErrorText(S);
          lua_pop(S, 1);
          TS_THROW << "monitor callback on '" << name << "': " << err;
        }
      },
      lua_toboolean(L, 3));
  return 0;
}

// A list of NDArrays; `false` or nil entries give none arrays (up to `n`).
std::vector<NDArray> ArrayList(lua_State* L, int index, const char* what, int n = -1) {
  std::vector<NDArray> out;
  if (lua_isnoneornil(L, index)) return out;
  luaL_checktype(L, index, LUA_TTABLE);
  if (n < 0) n = static_cast<int>(lua_objlen(L, index));
  for (int i = 1; i <= n; ++i) {
    lua_rawgeti(L, index, i);
    if (lua_isnil(L, -1) || (lua_isboolean(L, -1) && !lua_toboolean(L, -1)))
      out.emplace_back();
    else
      out.push_back(nd::CheckNDArray(L, -1, what));
    lua_pop(L, 1);
  }
  return out;
}

void PushArrays(lua_State* L, const std::vector<NDArray>& v) {
  lua_createtable(L, static_cast<int>(v.size()), 0);
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i].is_none())
      lua_pushboolean(L, 0);
    else
      nd::PushNDArray(L, v[i], false);
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
}

// mx.sym._bind(sym, ctx, args, args_grad, grad_req, aux, shared_exec)
int Bind(lua_State* L) {
  const graph::Symbol& s = CheckSymbol(L, 1, "bind");
  const Context ctx = CheckContext(L, 2, "bind");
  const int n_args = static_cast<int>(s.ListArguments().size());
  std::vector<NDArray> args = ArrayList(L, 3, "bind (args)");
  std::vector<NDArray> grads =
      ArrayList(L, 4, "bind (args_grad)", lua_isnoneornil(L, 4) ? -1 : n_args);
  std::vector<OpReqType> reqs;
  if (!lua_isnoneornil(L, 5)) {
    luaL_checktype(L, 5, LUA_TTABLE);
    for (int i = 1; i <= static_cast<int>(lua_objlen(L, 5)); ++i) {
      lua_rawgeti(L, 5, i);
      reqs.push_back(CheckGradReq(L, lua_gettop(L), "bind"));
      lua_pop(L, 1);
    }
  }
  std::vector<NDArray> aux = ArrayList(L, 6, "bind (aux_states)");
  const Executor* shared = lua_isnoneornil(L, 7) ? nullptr : &CheckExecutor(L, 7);
  PushExecutor(L, Executor::Bind(s, ctx, std::move(args), std::move(grads), std::move(reqs),
                                 std::move(aux), shared));
  return 1;
}

// mx.sym._simple_bind(sym, ctx, {name = shape}, {name = dtype}, {name = req}, default_req)
int SimpleBind(lua_State* L) {
  const graph::Symbol& s = CheckSymbol(L, 1, "simple_bind");
  const Context ctx = CheckContext(L, 2, "simple_bind");
  std::map<std::string, Shape> shapes;
  std::map<std::string, DType> types;
  std::map<std::string, OpReqType> reqs;
  for (int t = 3; t <= 5; ++t) {
    if (lua_isnoneornil(L, t)) continue;
    luaL_checktype(L, t, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, t) != 0) {
      const std::string key = CheckKey(L, -2, "simple_bind: an argument name");
      if (t == 3)
        shapes[key] = nd::CheckShape(L, lua_gettop(L), "simple_bind");
      else if (t == 4)
        types[key] = DTypeFromName(CheckString(L, -1, "simple_bind: dtype of " + key));
      else
        reqs[key] = CheckGradReq(L, lua_gettop(L), "simple_bind");
      lua_pop(L, 1);
    }
  }
  const OpReqType def = CheckGradReq(L, 6, "simple_bind");
  PushExecutor(L, Executor::SimpleBind(s, ctx, shapes, types, reqs, def));
  return 1;
}

int Forward(lua_State* L) {
  Executor& e = CheckExecutor(L, 1);
  RunningState running(L);
  e.Forward(lua_toboolean(L, 2));
  return 0;
}

int Backward(lua_State* L) {
  Executor& e = CheckExecutor(L, 1);
  std::vector<NDArray> grads;
  if (NDArray* a = nd::ToNDArray(L, 2))
    grads.push_back(*a);
  else
    grads = ArrayList(L, 2, "backward (out_grads)");
  RunningState running(L);
  e.Backward(grads);
  return 0;
}

int Outputs(lua_State* L) {
  PushArrays(L, CheckExecutor(L, 1).outputs());
  return 1;
}
int ArgArrays(lua_State* L) {
  PushArrays(L, CheckExecutor(L, 1).arg_arrays());
  return 1;
}
int GradArrays(lua_State* L) {
  PushArrays(L, CheckExecutor(L, 1).grad_arrays());
  return 1;
}
int AuxArrays(lua_State* L) {
  PushArrays(L, CheckExecutor(L, 1).aux_arrays());
  return 1;
}

int Reshape(lua_State* L) {
  Executor& e = CheckExecutor(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  std::map<std::string, Shape> shapes;
  lua_pushnil(L);
  while (lua_next(L, 2) != 0) {
    shapes[CheckKey(L, -2, "reshape: an argument name")] =
        nd::CheckShape(L, lua_gettop(L), "reshape");
    lua_pop(L, 1);
  }
  PushExecutor(L, e.Reshape(shapes));
  return 1;
}

int DebugStr(lua_State* L) {
  const std::string s = CheckExecutor(L, 1).DebugStr();
  lua_pushlstring(L, s.data(), s.size());
  return 1;
}

int MemoryBytes(lua_State* L) {
  Executor& e = CheckExecutor(L, 1);
  lua_pushnumber(L, static_cast<lua_Number>(e.planned_bytes()));
  lua_pushnumber(L, static_cast<lua_Number>(e.unshared_bytes()));
  return 2;
}

// e:storage_bytes([other]) -> bytes of the memory e's internal storage
// lies in (each chunk once), and of the part not shared with other's.
int StorageBytes(lua_State* L) {
  Executor& e = CheckExecutor(L, 1);
  std::set<const void*> theirs;
  if (!lua_isnoneornil(L, 2))
    for (const NDArray& b : CheckExecutor(L, 2).storage_blocks()) theirs.insert(b.chunk().get());
  size_t total = 0, own = 0;
  std::set<const void*> seen;  // blocks can be views of one shared chunk
  for (const NDArray& b : e.storage_blocks()) {
    if (!seen.insert(b.chunk().get()).second) continue;
    total += b.chunk()->bytes;
    if (!theirs.count(b.chunk().get())) own += b.chunk()->bytes;
  }
  lua_pushnumber(L, static_cast<lua_Number>(total));
  lua_pushnumber(L, static_cast<lua_Number>(own));
  return 2;
}

}  // namespace

void OpenExecutor(lua_State* L, int symt, int /*methods*/) {
  SetFunctions(L, symt,
               {{"_bind", Guarded<Bind>,
                 "mx.sym._bind(sym, ctx, args, args_grad, grad_req, aux): use sym:bind{...}"},
                {"_simple_bind", Guarded<SimpleBind>,
                 "mx.sym._simple_bind(sym, ctx, shapes, types, reqs, default_req): use "
                 "sym:simple_bind{...}"}});
  luaL_newmetatable(L, kExecutorMeta);
  const int meta = lua_gettop(L);
  lua_newtable(L);
  SetFunctions(L, lua_gettop(L),
               {{"forward", Guarded<Forward>, "e:forward(is_train)"},
                {"backward", Guarded<Backward>, "e:backward(out_grads)"},
                {"outputs", Guarded<Outputs>, "e:outputs() -> the output arrays"},
                {"arg_arrays", Guarded<ArgArrays>, "e:arg_arrays()"},
                {"grad_arrays", Guarded<GradArrays>, "e:grad_arrays() (false: no gradient)"},
                {"aux_arrays", Guarded<AuxArrays>, "e:aux_arrays()"},
                {"reshape", Guarded<Reshape>, "e:reshape{name = shape} -> a new executor"},
                {"debug_str", Guarded<DebugStr>, "e:debug_str() -> the plan"},
                {"set_monitor_callback", Guarded<SetMonitor>,
                 "e:set_monitor_callback(fn(name, array) | nil, all)"},
                {"memory_bytes", Guarded<MemoryBytes>,
                 "e:memory_bytes() -> planned bytes, bytes of the plan without sharing"},
                {"storage_bytes", Guarded<StorageBytes>,
                 "e:storage_bytes([other]) -> bytes of the storage blocks, of those not "
                 "shared with other's"}});
  lua_setfield(L, meta, "__index");
  lua_pushcfunction(L, ExeGc);
  lua_setfield(L, meta, "__gc");
  lua_pop(L, 1);
}

}  // namespace tessera::shell::sym
