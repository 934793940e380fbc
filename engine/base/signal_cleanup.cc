#include "engine/base/signal_cleanup.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>

namespace tessera {
namespace {

// A slot is free, being filled or emptied by its owner thread, holding a
// registered path, or claimed by the handler (the process is dying).
enum SlotState : int { kFree, kOwned, kRegistered, kClaimed };

constexpr int kSlots = 32;
constexpr size_t kMaxPath = 1024;

struct Slot {
  std::atomic<int> state{kFree};
  char path[kMaxPath];
};
static_assert(std::atomic<int>::is_always_lock_free, "the handler needs lock-free atomics");

Slot g_slots[kSlots];

void RemoveRegistered() {
  for (Slot& s : g_slots) {
    int expected = kRegistered;
    if (s.state.compare_exchange_strong(expected, kClaimed)) ::unlink(s.path);
  }
}

void InstallHandlers() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0) continue;
    if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) continue;
    struct sigaction sa {};
    sa.sa_handler = RemoveFilesThenDie;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ::sigaction(sig, &sa, nullptr);
  }
}

}  // namespace

void RemoveFilesThenDie(int sig) {
  const int saved_errno = errno;
  RemoveRegistered();
  std::signal(sig, SIG_DFL);
  // Blocked while this handler runs: delivered, with the default action, on
  // return.
  std::raise(sig);
  errno = saved_errno;
}

int RegisterFileForSignalCleanup(const std::string& path) {
  static std::once_flag installed;
  std::call_once(installed, InstallHandlers);
  if (path.size() >= kMaxPath) return -1;
  for (int i = 0; i < kSlots; ++i) {
    Slot& s = g_slots[i];
    int expected = kFree;
    if (!s.state.compare_exchange_strong(expected, kOwned)) continue;
    std::memcpy(s.path, path.c_str(), path.size() + 1);
    s.state.store(kRegistered, std::memory_order_release);
    return i;
  }
  return -1;
}

void UnregisterFileForSignalCleanup(int slot) {
  if (slot < 0 || slot >= kSlots) return;
  int expected = kRegistered;
  // Fails only when the handler claimed it: the process is ending.
  g_slots[slot].state.compare_exchange_strong(expected, kFree);
}

}  // namespace tessera
