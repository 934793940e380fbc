// A group of ops: those the calling thread pushes while the group is open.
// The REPL's :time waits for exactly the work its statement pushed rather
// than for everything outstanding, and reports that work's first failure.
//
//   PushGroup g;                    // open: this thread's pushes join it
//   statement();
//   g.Close();                      // later pushes do not
//   g.SetOnDone([&] { wake(); });   // called by the thread ending its last op
//   while (!g.done()) serve_or_sleep();
//   g.RethrowError();               // the first failed op among them, if any
//
// Only pushes from the opening thread join: an op that pushes more work from
// a worker ends after it (async ops) or owns it. Groups nest: closing one
// makes the group it was opened inside current again. An op keeps the
// group's record alive until it ends, so destroying a group with ops still
// running (an interrupted wait) is safe.
#pragma once

#include <functional>

namespace tessera::engine {

struct PushGroupState;

class PushGroup {
 public:
  PushGroup();
  ~PushGroup();
  PushGroup(const PushGroup&) = delete;
  PushGroup& operator=(const PushGroup&) = delete;

  // Later pushes from this thread no longer join. Idempotent. Call on the
  // opening thread.
  void Close();
  // Every op that joined has ended (ran, failed or was skipped).
  bool done() const;
  // `fn` runs, on the thread that ends it, each time the last op in flight
  // ends; it must be quick and must not throw.
  void SetOnDone(std::function<void()> fn);
  // Throws the tessera::Error of the first op of the group that failed (an
  // op skipped because an input was poisoned carries the error of the op
  // that poisoned it), naming that op; returns when none failed. The error
  // counts as reported: a later WaitForAll does not raise it again.
  void RethrowError() const;

 private:
  PushGroupState* state_;
  PushGroupState* outer_;
  bool open_ = true;
};

}  // namespace tessera::engine
