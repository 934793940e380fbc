#include "engine_wait.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "engine/base/error.h"
#include "engine/scheduler/hold.h"
#include "interpreter.h"
#include "wait_threads.h"

namespace tessera::shell {
namespace {

using engine::Engine;
using engine::EngineType;
using engine::VarHandle;

// Waits given up on (Ctrl-C) whose helper is still blocked. Their errors are
// reported by the next wait instead of being lost.
std::vector<std::shared_ptr<BlockingWait>> g_abandoned;

void RethrowAbandoned() {
  for (auto it = g_abandoned.begin(); it != g_abandoned.end();) {
    if (!(*it)->done.load(std::memory_order_acquire)) {
      ++it;
      continue;
    }
    std::exception_ptr error = (*it)->error;
    it = g_abandoned.erase(it);
    if (error) std::rethrow_exception(error);
  }
}

// Serves the interpreter's queue until `w` is done, `start(w)` having
// arranged for `w->done` to be set and the queue woken. A wait given up on
// (Ctrl-C) is kept, so its error is reported by the next wait.
template <typename Start>
void ServeWait(lua_State* L, Interpreter* in, Start start) {
  in->CheckServeDepth();  // before the wait starts: nothing left waiting behind
  auto w = std::make_shared<BlockingWait>();
  start(w);
  try {
    in->ServeUntil(L, [&] { return w->done.load(std::memory_order_acquire); });
  } catch (...) {
    g_abandoned.push_back(std::move(w));
    throw;
  }
  if (w->error) std::rethrow_exception(w->error);
}

Interpreter* InterpreterForWait() {
  Interpreter* in = Interpreter::Get();
  TS_CHECK(in && in->OnThread()) << "engine waits from Lua must run on the interpreter thread";
  RethrowAbandoned();
  return in;
}

// Runs `wait` where it cannot keep the interpreter from serving its queue: on
// a helper thread.
template <typename Fn>
void Wait(lua_State* L, Fn wait) {
  Interpreter* in = InterpreterForWait();
  // The naive engine finished every op at its push: nothing can be pending
  // on Lua work, and the wait returns at once.
  if (Engine::Get()->type() == EngineType::kNaive) {
    wait();
    return;
  }
  ServeWait(L, in, [&](const std::shared_ptr<BlockingWait>& w) {
    w->wait = std::move(wait);
    w->on_done = [in] { in->queue().Wake(); };
    StartOnHelper(w);
  });
}

}  // namespace

void WaitForVar(lua_State* L, VarHandle var, engine::WaitMode mode) {
  TS_CHECK(var != nullptr) << "wait_for_var: not an engine variable";
  // Inside a Lua op: refused when it would wait for the op itself, directly
  // or through work pushed inside it (engine/scheduler/hold.h).
  engine::CheckWaitAgainstHolds(var, mode == engine::WaitMode::kWrite, "waiting");
  // Done already (a result computed long ago, an op's own alias): nothing
  // to hand over.
  if (g_abandoned.empty() && Engine::IsSettled(var, mode)) return;
  Interpreter* in = InterpreterForWait();
  if (Engine::Get()->type() == EngineType::kNaive) return Engine::Get()->WaitForVar(var, mode);
  // No helper thread: the engine thread that settles the variable wakes the
  // queue itself, one hand-over between threads instead of two. That thread
  // keeps nothing of the wait once `done` is set: the interpreter owns it
  // (until done, or in g_abandoned), and the error, the only reference to
  // it, is released on the interpreter thread.
  ServeWait(L, in, [&](const std::shared_ptr<BlockingWait>& w) {
    Engine::Get()->NotifyWhenSettled(
        {&var, 1},
        [w = w.get(), in](std::exception_ptr error) {
          w->error = std::move(error);
          w->done.store(true, std::memory_order_release);
          in->queue().Wake();
        },
        mode);
  });
}

void WaitForGroup(lua_State* L, engine::PushGroup& group) {
  Interpreter* in = Interpreter::Get();
  TS_CHECK(in && in->OnThread()) << "engine waits from Lua must run on the interpreter thread";
  // The group's last op wakes the queue; its ops may need Lua meanwhile.
  group.SetOnDone([in] { in->queue().Wake(); });
  in->ServeUntil(L, [&group] { return group.done(); });
  group.RethrowError();
}

void WaitForAll(lua_State* L) {
  Interpreter* in = Interpreter::Get();
  if (!in->running_work().empty())
    TS_THROW << "wait_for_all inside engine op '" << in->running_work().back().name
             << "' would wait for the op itself";
  // Nothing pending: no op can need this thread, so no helper is needed.
  if (g_abandoned.empty() && Engine::Get()->WaitForAllIfIdle()) return;
  Wait(L, [] { Engine::Get()->WaitForAll(); });
}

}  // namespace tessera::shell
