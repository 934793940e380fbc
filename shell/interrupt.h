// Ctrl-C. The SIGINT handler only sets a flag, wakes the interpreter's poll()
// and, as lua.c does, arms a Lua hook so that running Lua code raises
// "interrupted!" at its next instruction. Whoever is waiting (the prompt, a
// wait primitive, the hook) takes the flag.
//
// Code compiled by LuaJIT's JIT never calls hooks, so a compiled loop cannot
// be interrupted; the REPL runs each typed chunk's top level interpreted for
// that reason. A second Ctrl-C while the first is still untaken says so and
// restores the default action, so a third one ends the process.
#pragma once

#include <lua.hpp>

namespace tessera::shell {

// Installs the handler. `hook` is armed on `L` on every Ctrl-C; `wake_fd` is
// an eventfd written on every Ctrl-C. Call on the interpreter thread.
void InstallInterruptHandler(lua_State* L, lua_Hook hook, int wake_fd);
// True once per Ctrl-C.
bool TakeInterrupt();
bool InterruptPending();

// While one lives, Ctrl-C ends a blocking read() of the interpreter thread
// with EINTR instead of restarting it. The line editor reads a key only
// after poll() said one is there, but the terminal drops typed-ahead input
// when Ctrl-C arrives, so that read can block after all; restarted, it
// would sit there with the Ctrl-C untaken until the next key.
class InterruptBreaksReads {
 public:
  InterruptBreaksReads();
  ~InterruptBreaksReads();
  InterruptBreaksReads(const InterruptBreaksReads&) = delete;
  InterruptBreaksReads& operator=(const InterruptBreaksReads&) = delete;
};

}  // namespace tessera::shell
