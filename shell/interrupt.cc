#include "interrupt.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdint>

#include "engine/base/signal_cleanup.h"

namespace tessera::shell {
namespace {

// Everything the handler touches is set before the handler is installed.
lua_State* g_state = nullptr;
lua_Hook g_hook = nullptr;
int g_wake_fd = -1;
pthread_t g_interpreter_thread;
volatile sig_atomic_t g_pending = 0;
volatile sig_atomic_t g_default_restored = 0;
bool g_restart_reads = true;  // interpreter thread only

void OnSigint(int sig) {
  // Engine and helper threads may receive the signal: only the interpreter's
  // thread may touch the Lua state, so pass it on.
  if (!pthread_equal(pthread_self(), g_interpreter_thread)) {
    pthread_kill(g_interpreter_thread, sig);
    return;
  }
  if (g_pending) {
    static const char kMsg[] =
        "\n(the running code does not see Ctrl-C: JIT-compiled code or a blocking call; "
        "press Ctrl-C again to quit)\n";
    [[maybe_unused]] ssize_t n = write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
    g_default_restored = 1;
    // The default action, after removing the temporaries of saves in
    // progress, which ending the process would leave behind.
    signal(SIGINT, RemoveFilesThenDie);
    return;
  }
  g_pending = 1;
  lua_sethook(g_state, g_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(g_wake_fd, &one, sizeof one);
}

void Install() {
  struct sigaction sa {};
  sa.sa_handler = OnSigint;
  sigemptyset(&sa.sa_mask);
  // Plain reads and writes carry on unless an InterruptBreaksReads lives;
  // poll() returns EINTR either way.
  sa.sa_flags = g_restart_reads ? SA_RESTART : 0;
  sigaction(SIGINT, &sa, nullptr);
}

}  // namespace

void InstallInterruptHandler(lua_State* L, lua_Hook hook, int wake_fd) {
  g_state = L;
  g_hook = hook;
  g_wake_fd = wake_fd;
  g_interpreter_thread = pthread_self();
  Install();
}

bool TakeInterrupt() {
  if (!g_pending) return false;
  g_pending = 0;
  if (g_default_restored) {
    g_default_restored = 0;
    Install();
  }
  return true;
}

bool InterruptPending() {
  return g_pending != 0;
}

InterruptBreaksReads::InterruptBreaksReads() {
  g_restart_reads = false;
  if (g_state && !g_default_restored) Install();
}

InterruptBreaksReads::~InterruptBreaksReads() {
  g_restart_reads = true;
  if (g_state && !g_default_restored) Install();
}

}  // namespace tessera::shell
