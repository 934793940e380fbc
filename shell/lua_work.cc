#include "lua_work.h"

#include <optional>

#include "engine/base/error.h"
#include "engine/scheduler/hold.h"
#include "interpreter.h"
#include "lua_util.h"

namespace tessera::shell {

std::shared_ptr<LuaWork> LuaWork::Create(lua_State* L, int fn_index, std::string name,
                                         std::vector<engine::VarHandle> reads,
                                         std::vector<engine::VarHandle> writes) {
  Interpreter* in = Interpreter::Get();
  TS_CHECK(in && in->OnThread()) << "Lua work must be created on the interpreter thread";
  std::shared_ptr<LuaWork> w(new LuaWork());
  lua_pushvalue(L, fn_index);
  w->ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  w->name_ = engine::Engine::InternName(name);
  w->reads_ = std::move(reads);
  w->writes_ = std::move(writes);
  w->nesting_ = RunningNesting();
  in->BeginLuaWork();
  return w;
}

int LuaWork::RunningNesting() {
  const auto& running = Interpreter::Get()->running_work();
  return running.empty() ? 0 : running.back().nesting;
}

LuaWork::~LuaWork() {
  Interpreter* in = Interpreter::Get();
  int ref = ref_;
  auto release = [in, ref](lua_State* L) {
    luaL_unref(L, LUA_REGISTRYINDEX, ref);
    in->EndLuaWork();
  };
  if (in->closed()) return;
  if (in->OnThread())
    release(in->state());
  else
    in->Post(release);
}

void LuaWork::Run(Args args, Done done) {
  Interpreter* in = Interpreter::Get();
  if (in->OnThread()) {
    // The running Lua thread (a coroutine when called from one): the main
    // thread's stack must not be used while a coroutine runs.
    RunHere(tls_calling_state ? tls_calling_state : in->state(), args, done);
    return;
  }
  // The function runs on behalf of the engine op calling this (it holds that
  // op's variables until `done`): waits inside it are checked against the op.
  // A task the interpreter drops unrun (it closed first) still ends the op.
  struct EndIfDropped {
    Done done;
    bool ran = false;
    ~EndIfDropped() {
      if (!ran && done)
        done(std::make_exception_ptr(Error("the interpreter closed before the Lua op ran")));
    }
  };
  auto end = std::make_shared<EndIfDropped>();
  end->done = std::move(done);
  in->Post([self = shared_from_this(), args = std::move(args), end,
            hold = engine::CurrentHold()](lua_State* L) {
    std::optional<engine::HoldScope> scope;
    if (hold) scope.emplace(hold);
    end->ran = true;
    self->RunHere(L, args, end->done);
  });
}

void LuaWork::RunHere(lua_State* L, const Args& args, const Done& done) {
  Interpreter* in = Interpreter::Get();
  std::exception_ptr error;
  if (!lua_checkstack(L, 8)) {
    error = std::make_exception_ptr(Error("Lua stack overflow"));
  } else if (in->running_work().size() >= kMaxRunning) {
    error = std::make_exception_ptr(
        Error(std::string("Lua op '") + name_ + "': Lua ops nested more than " +
              std::to_string(kMaxRunning) + " deep, each run inside the one before (a push " +
              "inside a Lua op runs at once on the naive engine); a stack overflow would follow"));
  } else {
    in->running_work().push_back({name_, &reads_, &writes_, nesting_});
    int top = lua_gettop(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref_);
    int nargs = 0;
    try {
      if (args) nargs = args(L);
    } catch (...) {
      error = std::current_exception();
    }
    if (!error && CallWithTraceback(L, nargs, 0) != 0)
      error = std::make_exception_ptr(Error(ErrorText(L)));
    lua_settop(L, top);
    in->running_work().pop_back();
  }
  done(error);
}

std::string DescribeFunction(lua_State* L, int index) {
  lua_Debug ar;
  lua_pushvalue(L, index);
  if (!lua_getinfo(L, ">S", &ar)) return "lua";
  if (ar.what && std::string_view(ar.what) == "C") return "lua:C";
  return std::string("lua:") + ar.short_src + ":" + std::to_string(ar.linedefined);
}

}  // namespace tessera::shell
