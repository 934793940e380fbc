// The interpreter: the one Lua state of the process and the thread it lives
// on. All Lua runs on this thread. Engine threads that need Lua run post a
// Task to its queue; the interpreter runs posted tasks
//   - whenever it waits (ServeUntil, used by every wait the shell exposes),
//   - while idle at the prompt (the line editor polls the queue's fd),
//   - between statements while Lua work is outstanding (a count hook), and
//   - after each chunk it runs.
#pragma once

#include <lua.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "engine/scheduler/engine.h"
#include "task_queue.h"

namespace tessera::shell {

class Interpreter {
 public:
  // Creates the process's interpreter on the calling thread: the Lua state,
  // the standard libraries, the embedded modules (package.preload) and the
  // global `mx`. Never destroyed (engine threads may post to it until the
  // process exits); Close() shuts the Lua state. Throws tessera::Error.
  static Interpreter* Create();
  // The process's interpreter; null before Create.
  static Interpreter* Get();

  lua_State* state() const { return L_; }
  bool OnThread() const { return std::this_thread::get_id() == thread_; }
  bool closed() const { return L_ == nullptr; }

  // Any thread. Dropped once the interpreter is closed.
  void Post(Task task);
  TaskQueue& queue() { return queue_; }
  // Interpreter thread: runs every posted task on `L`, the running thread of
  // the state (a coroutine when called from one; the main thread's stack must
  // not be used while a coroutine runs).
  void Drain(lua_State* L);
  // Interpreter thread: runs posted tasks on `L` until done() holds, sleeping
  // in between. Throws tessera::Error("interrupted") on Ctrl-C.
  void ServeUntil(lua_State* L, const std::function<bool()>& done);
  // Throws when one more ServeUntil would nest too deep (kMaxServeDepth):
  // callers that start work for a wait check first, so none is left behind.
  void CheckServeDepth() const;

  // Interpreter thread. While Lua work is outstanding (a LuaWork exists) a
  // count hook serves the queue between statements of interpreted code.
  void BeginLuaWork();
  void EndLuaWork();

  // Interpreter thread: Lua work running now, innermost last (see lua_work.h).
  struct RunningWork {
    const char* name;
    const std::vector<engine::VarHandle>* reads;
    const std::vector<engine::VarHandle>* writes;
    int nesting;  // LuaWork::nesting() of the work
  };
  std::vector<RunningWork>& running_work() { return running_; }

  // Closes the Lua state (finalizers run); later posts are dropped.
  void Close();

 private:
  Interpreter();
  static void Hook(lua_State* L, lua_Debug* ar);
  void ArmHook();
  // Before ServeUntil sleeps: yields the core for up to kBriefWait, and says
  // whether something to act on came meanwhile (done, a task, a Ctrl-C).
  bool AwaitBriefly(const std::function<bool()>& done) const;

  lua_State* L_ = nullptr;
  std::thread::id thread_;
  TaskQueue queue_;
  int lua_work_ = 0;
  int draining_ = 0;
  int serving_ = 0;  // ServeUntil calls on the stack
  // Nested ServeUntil calls allowed: far beyond real programs, far below the
  // 8 MB stack (a level takes about 2 KB of C stack plus LuaJIT's frames).
  static constexpr int kMaxServeDepth = 200;
  // A thread asleep in poll takes tens of microseconds to run again once
  // woken (20-30 us on a 2-core virtual machine, more than a 64K-element add
  // takes on a worker), so a wait for a short op is cheaper awake.
  static constexpr std::chrono::microseconds kBriefWait{50};
  std::vector<RunningWork> running_;
};

}  // namespace tessera::shell
