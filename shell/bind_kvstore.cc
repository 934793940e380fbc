// The collectives across processes under mx.kv's dist stores
// (shell/lua/mx/kv.lua): mx._collectives.start, allreduce, broadcast.
#include "bind_ndarray.h"
#include "bindings.h"
#include "engine/kvstore/collectives.h"
#include "lua_util.h"

namespace tessera::shell {
namespace {

using kvstore::Collectives;

// mx._collectives.start() -> rank, size, timeout (seconds): starts MPI once.
int DistStart(lua_State* L) {
  Collectives& c = Collectives::Get();
  lua_pushinteger(L, c.rank());
  lua_pushinteger(L, c.size());
  lua_pushnumber(L, c.timeout_seconds());
  return 3;
}

Collectives::Reduce CheckReduce(lua_State* L, int index) {
  const std::string op = luaL_optstring(L, index, "sum");
  if (op == "sum") return Collectives::Reduce::kSum;
  if (op == "min") return Collectives::Reduce::kMin;
  if (op == "max") return Collectives::Reduce::kMax;
  luaL_error(L, "kv allreduce: op must be 'sum', 'min' or 'max', got '%s'", op.c_str());
  return Collectives::Reduce::kSum;
}

// mx._collectives.allreduce(arrays, op = 'sum', priority = 0, what = 'allreduce', copies)
int Allreduce(lua_State* L) {
  const std::vector<NDArray> arrays = nd::CheckArrayList(L, 1, "kv allreduce");
  const Collectives::Reduce op = CheckReduce(L, 2);
  const int priority = static_cast<int>(luaL_optinteger(L, 3, 0));
  const std::vector<NDArray> copies = nd::CheckArrayList(L, 5, "kv allreduce (copies)");
  Collectives::Get().PushAllreduce(arrays, op, priority, luaL_optstring(L, 4, "allreduce"), copies);
  return 0;
}

// mx._collectives.broadcast(arrays, root = 0, priority = 0, what = 'broadcast')
int Broadcast(lua_State* L) {
  const std::vector<NDArray> arrays = nd::CheckArrayList(L, 1, "kv broadcast");
  const int root = static_cast<int>(luaL_optinteger(L, 2, 0));
  const int priority = static_cast<int>(luaL_optinteger(L, 3, 0));
  Collectives::Get().PushBroadcast(arrays, root, priority, luaL_optstring(L, 4, "broadcast"));
  return 0;
}

// mx._collectives.window(array, owner, what) -> id (collective)
int Window(lua_State* L) {
  const NDArray& a = nd::CheckNDArray(L, 1, "kv window");
  const int owner = static_cast<int>(luaL_checkinteger(L, 2));
  lua_pushinteger(L, Collectives::Get().PushWindow(a, owner, luaL_optstring(L, 3, "window")));
  return 1;
}

// mx._collectives.access(id, 'replace'|'add'|'read', array, priority = 0, what)
int Access(lua_State* L) {
  const int id = static_cast<int>(luaL_checkinteger(L, 1));
  const std::string how = luaL_checkstring(L, 2);
  Collectives::Access access = Collectives::Access::kRead;
  if (how == "replace") {
    access = Collectives::Access::kReplace;
  } else if (how == "add") {
    access = Collectives::Access::kAdd;
  } else if (how != "read") {
    luaL_error(L, "kv access: how must be 'replace', 'add' or 'read', got '%s'", how.c_str());
  }
  const NDArray& a = nd::CheckNDArray(L, 3, "kv access");
  const int priority = static_cast<int>(luaL_optinteger(L, 4, 0));
  Collectives::Get().PushAccess(id, access, a, priority, luaL_optstring(L, 5, "access"));
  return 0;
}

void Open(lua_State* L, int mx) {
  PushTableField(L, mx, "_collectives");
  SetFunctions(
      L, lua_gettop(L),
      {{"start", Guarded<DistStart>,
        "mx._collectives.start() -> rank, num_workers, timeout: starts MPI (once) for the "
        "stores across processes"},
       {"allreduce", Guarded<Allreduce>,
        "mx._collectives.allreduce(arrays, op = 'sum'|'min'|'max', priority = 0, what, copies) "
        "-> pushes one collective: each array becomes its sum (min, max) over the processes "
        "(and so does its copy, when copies are given); several arrays travel fused in one "
        "buffer"},
       {"broadcast", Guarded<Broadcast>,
        "mx._collectives.broadcast(arrays, root = 0, priority = 0, what) -> pushes one collective: "
        "each array becomes root's"},
       {"window", Guarded<Window>,
        "mx._collectives.window(array, owner, what) -> id: pushes one collective that makes a "
        "window holding owner's array, reached by the others without owner (dist_async)"},
       {"access", Guarded<Access>,
        "mx._collectives.access(id, 'replace'|'add'|'read', array, priority = 0, what) -> "
        "pushes one access to a window's values on its owner (not collective; atomic per "
        "element)"}});
  lua_pop(L, 1);
}

}  // namespace

TESSERA_SHELL_BINDING(kvstore, 40, Open);

}  // namespace tessera::shell
