// A Lua function that engine ops run: the bridge between an engine thread and
// the interpreter thread. mx.engine.push uses it, and so will operators
// written in Lua.
//
//   auto work = LuaWork::Create(L, fn_index, "my_op", reads, writes);  // interpreter thread
//   engine->PushAsync([work](RunContext, CallbackOnComplete done) {
//     work->Run(nullptr, [done](std::exception_ptr e) { e ? done(e) : done(); });
//   }, ctx, reads, writes, FnProperty::kNormal, 0, work->name());
//
// Run may be called from any thread. On an engine thread it posts the call to
// the interpreter's queue and returns at once, freeing the worker; the
// function runs when the interpreter next serves its queue, and `done` runs
// right after it on the interpreter thread. Called on the interpreter thread
// itself (the naive engine runs a push inline) it runs the function at once.
#pragma once

#include <lua.hpp>

#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/scheduler/engine.h"

namespace tessera::shell {

class LuaWork : public std::enable_shared_from_this<LuaWork> {
 public:
  // Interpreter thread. Keeps the function at `fn_index` alive until the
  // last reference to the work is dropped, from whichever thread: an op that
  // the engine skips (a poisoned input) releases it through its destructor.
  // `reads` and `writes` let waits inside the function detect that they would
  // wait for the function itself.
  static std::shared_ptr<LuaWork> Create(lua_State* L, int fn_index, std::string name,
                                         std::vector<engine::VarHandle> reads,
                                         std::vector<engine::VarHandle> writes);
  ~LuaWork();
  LuaWork(const LuaWork&) = delete;
  LuaWork& operator=(const LuaWork&) = delete;

  // Pushes the function's arguments and returns how many (may be empty).
  using Args = std::function<int(lua_State*)>;
  // Called once with the Lua error (message and traceback) or null.
  using Done = std::function<void(std::exception_ptr)>;
  void Run(Args args, Done done);

  // Interned: valid for the life of the process, as engine op names must be.
  const char* name() const { return name_; }

  // How many Lua custom ops this work runs inside: work made while other
  // work runs inherits its count, and a custom op's own work counts one
  // more (set_nesting), so a custom op that calls itself, directly or
  // through other work, is seen at every level however its calls are
  // queued. Work made at the top level has 0.
  int nesting() const { return nesting_; }
  void set_nesting(int n) { nesting_ = n; }
  // The nesting of the innermost work running now on the interpreter
  // thread, 0 outside any.
  static int RunningNesting();

  // How many Lua ops may run on the interpreter's stack at once, each inside
  // the one before: on the naive engine a push made by a Lua op runs there
  // and then; on the threaded engine a wait inside one serves the next
  // (bounded first, at Interpreter::kMaxServeDepth). Past it the op fails
  // with an error instead of overflowing the stack.
  static constexpr size_t kMaxRunning = 200;

 private:
  LuaWork() = default;
  void RunHere(lua_State* L, const Args& args, const Done& done);

  int ref_ = LUA_NOREF;
  const char* name_ = "lua";
  int nesting_ = 0;
  std::vector<engine::VarHandle> reads_, writes_;
};

// "lua:file.lua:12", the default op name of the Lua function at `index`.
std::string DescribeFunction(lua_State* L, int index);

}  // namespace tessera::shell
