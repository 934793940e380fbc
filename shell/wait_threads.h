// Helper threads for waits. The interpreter thread never blocks inside the
// engine: it hands the blocking wait to a helper thread and serves its task
// queue until the helper reports back, so Lua work the wait depends on keeps
// running. Helpers are reused; a wait started while another is in progress
// (a wait inside a Lua op that runs during a wait) gets a fresh helper.
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <memory>

namespace tessera::shell {

struct BlockingWait {
  std::function<void()> wait;  // runs on the helper; may throw
  std::exception_ptr error;    // what it threw
  std::atomic<bool> done{false};
  std::function<void()> on_done;  // runs on the helper after `done` is set
  // The caller of StartOnHelper must hold its reference until `done` is set.
};

// Starts `w->wait` on an idle helper thread (created when none is idle).
void StartOnHelper(std::shared_ptr<BlockingWait> w);

}  // namespace tessera::shell
