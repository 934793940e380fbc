#include "interpreter.h"

#include <poll.h>
#include <sched.h>

#include <cerrno>
#include <cstring>

#include "bindings.h"
#include "embedded_lua.h"
#include "engine/base/error.h"
#include "interrupt.h"
#include "lua_util.h"

namespace tessera::shell {
namespace {

Interpreter* g_interpreter = nullptr;

// Instructions between two looks at the queue while Lua work is outstanding.
constexpr int kHookInstructions = 1000;

// package.preload loader of an embedded module: upvalue 1 is its EmbeddedLua.
int LoadEmbedded(lua_State* L) {
  auto* m = static_cast<const EmbeddedLua*>(lua_touserdata(L, lua_upvalueindex(1)));
  std::string chunkname = std::string("@tessera/") + m->path;
  if (luaL_loadbuffer(L, m->source, m->size, chunkname.c_str()) != 0) return lua_error(L);
  lua_pushvalue(L, 1);  // the module name, as require passes it
  lua_call(L, 1, 1);
  return 1;
}

int RequireTessera(lua_State* L) {
  lua_pushvalue(L, lua_upvalueindex(1));
  return 1;
}

void PreloadEmbedded(lua_State* L) {
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "preload");
  for (const EmbeddedLua& m : EmbeddedLuaModules()) {
    lua_pushlightuserdata(L, const_cast<EmbeddedLua*>(&m));
    lua_pushcclosure(L, LoadEmbedded, 1);
    lua_setfield(L, -2, m.module);
  }
  lua_pop(L, 2);
}

// Creates `mx`: the C++ bindings, then the Lua half (shell/lua/mx.lua), which
// receives the table and fills in the rest.
int OpenMx(lua_State* L) {
  lua_newtable(L);
  int mx = lua_gettop(L);
  OpenBindings(L, mx);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "tessera.mx");
  lua_call(L, 1, 1);
  lua_pushvalue(L, mx);
  lua_call(L, 1, 0);
  lua_pushvalue(L, mx);
  lua_setglobal(L, "mx");
  // The globals there now are the start-up's: :who lists only later ones.
  lua_getglobal(L, "require");
  lua_pushliteral(L, "tessera.pretty");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "mark_globals");
  lua_call(L, 0, 0);
  lua_pop(L, 1);
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "preload");
  lua_pushvalue(L, mx);
  lua_pushcclosure(L, RequireTessera, 1);
  lua_setfield(L, -2, "tessera");
  lua_getfield(L, -2, "loaded");
  lua_pushvalue(L, mx);
  lua_setfield(L, -2, "tessera");
  return 0;
}

}  // namespace

Interpreter* Interpreter::Get() {
  return g_interpreter;
}

Interpreter::Interpreter() : thread_(std::this_thread::get_id()) {}

Interpreter* Interpreter::Create() {
  TS_CHECK(!g_interpreter) << "the interpreter exists already";
  auto* in = new Interpreter();
  // luaL_newstate uses LuaJIT's own allocator, which is what a LuaJIT built
  // without GC64 needs on x86-64 (its objects must live in the low 2 GiB).
  in->L_ = luaL_newstate();
  TS_CHECK(in->L_ != nullptr)
      << "cannot create the LuaJIT state: out of memory, or a LuaJIT built without GC64 "
         "found no memory in the low 2 GiB of the address space (use a GC64 LuaJIT)";
  g_interpreter = in;
  lua_State* L = in->L_;
  luaL_openlibs(L);
  PreloadEmbedded(L);
  lua_pushcfunction(L, OpenMx);
  if (CallWithTraceback(L, 0, 0) != 0) {
    std::string msg = ErrorText(L);
    TS_THROW << "cannot set up the mx API: " << msg;
  }
  InstallInterruptHandler(L, &Interpreter::Hook, in->queue_.fd());
  // Held by the engine's run-ahead bound, the interpreter keeps serving its
  // queue: the ops in flight may be Lua ops that only it can run.
  static const engine::Engine::ThreadBlocking serve{
      [in](const std::function<bool()>& done) {
        in->ServeUntil(tls_calling_state ? tls_calling_state : in->state(), done);
      },
      [in] { in->queue().Wake(); }};
  engine::Engine::SetThreadBlocking(&serve);
  return in;
}

void Interpreter::Post(Task task) {
  if (closed()) return;
  queue_.Post(std::move(task));
}

void Interpreter::Drain(lua_State* L) {
  if (closed()) return;
  ++draining_;
  while (Task t = queue_.Take()) t(L);
  --draining_;
}

void Interpreter::CheckServeDepth() const {
  // A Lua op served in a wait may wait in turn, and serve the next one
  // inside that wait: each level takes C stack (LuaJIT's and ours). Past the
  // bound the wait fails with an error instead of overflowing the stack.
  TS_CHECK(serving_ < kMaxServeDepth)
      << "too many nested waits: " << serving_
      << " waits inside Lua ops that run inside waits (each op served while the one before "
         "waits); wait outside the op, or push the work without waiting for it inside";
}

void Interpreter::ServeUntil(lua_State* L, const std::function<bool()>& done) {
  CheckServeDepth();
  ++serving_;
  struct Leave {
    int* depth;
    ~Leave() { --*depth; }
  } leave{&serving_};
  for (;;) {
    queue_.ClearWakeups();
    Drain(L);
    if (done()) return;
    if (TakeInterrupt()) TS_THROW << "interrupted";
    if (AwaitBriefly(done)) continue;
    pollfd p{queue_.fd(), POLLIN, 0};
    if (poll(&p, 1, -1) < 0 && errno != EINTR)
      TS_THROW << "waiting for the engine: poll failed: " << std::strerror(errno);
  }
}

bool Interpreter::AwaitBriefly(const std::function<bool()>& done) const {
  const auto until = std::chrono::steady_clock::now() + kBriefWait;
  do {
    if (done() || !queue_.empty() || InterruptPending()) return true;
    // Yield, not pause: the op waited for may want this core for its
    // OpenMP threads, and a pausing loop would hold the core from them.
    sched_yield();
  } while (std::chrono::steady_clock::now() < until);
  return false;
}

void Interpreter::BeginLuaWork() {
  if (lua_work_++ == 0) ArmHook();
}

void Interpreter::EndLuaWork() {
  if (--lua_work_ == 0) ArmHook();
}

void Interpreter::ArmHook() {
  if (closed()) return;
  if (lua_work_ > 0)
    lua_sethook(L_, &Interpreter::Hook, LUA_MASKCOUNT, kHookInstructions);
  else
    lua_sethook(L_, nullptr, 0, 0);
  // A Ctrl-C that arrived meanwhile must still stop the running code.
  if (InterruptPending()) lua_sethook(L_, &Interpreter::Hook, LUA_MASKCOUNT, 1);
}

void Interpreter::Hook(lua_State* L, lua_Debug*) {
  Interpreter* in = g_interpreter;
  if (TakeInterrupt()) {
    in->ArmHook();
    luaL_error(L, "interrupted!");
  }
  // After a Ctrl-C that a wait or the prompt took, the hook still fires on
  // every instruction: put the periodic one back (lua_sethook is not free).
  if (lua_gethookmask(L) != LUA_MASKCOUNT || lua_gethookcount(L) != kHookInstructions)
    in->ArmHook();
  // Tasks posted while a task runs are reached by the loop already draining.
  if (in->draining_ == 0 && !in->queue_.empty()) in->Drain(L);
}

void Interpreter::Close() {
  if (closed()) return;
  engine::Engine::SetThreadBlocking(nullptr);  // nothing left to serve
  lua_State* L = L_;
  lua_close(L);
  L_ = nullptr;
  while (Task t = queue_.Take()) {
  }  // tasks for a closed state are dropped
}

}  // namespace tessera::shell
