// Holds: code a thread runs on behalf of an op that holds its variables. A
// wait made there on anything that cannot finish before the op does would
// wait for ever: a variable the op writes (or, for a write wait, reads), or
// the result of work pushed meanwhile that must queue behind the op, directly
// or through other such work (`b = a + 1` inside an op that writes `a`, then
// a wait on `b`). The engine refuses those waits with an error instead.
//
// A thread holds an op while it runs the op's function (the engine marks
// that itself) and while it runs code an async op handed to it (the Lua body
// of a custom op or of mx.engine.push runs on the interpreter thread): the
// async op's function takes CurrentHold() on the worker and the thread that
// runs its code enters a HoldScope with it.
//
// Work pushed while a thread holds an op is checked against the op's
// variables and the marks left by earlier such pushes; work that must queue
// behind the op marks the variables it writes (and reads) with the hold's
// serial, under their push locks. A wait compares the variable with every
// hold of the calling thread: its lists, then its marks. Marks of a hold that
// has ended are never matched again (serials are not reused).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/base/error.h"
#include "engine/scheduler/handles.h"

namespace tessera::engine {

class Opr;

// A hold that can travel to another thread: the op's variables, sorted.
struct Hold {
  uint64_t serial = 0;
  std::vector<VarHandle> reads, writes;
  std::string name;
};
using HoldRef = std::shared_ptr<const Hold>;

// One hold on a thread's list: an op's, or a Hold that a scope keeps.
struct HoldEntry {
  uint64_t serial;   // 0 until needed
  const Opr* op;     // the op held, or null when `hold` is
  const Hold* hold;  // the hold entered from another thread, or null
  HoldEntry* outer;  // the scope entered before this one, or null
};
namespace hold_detail {
// The innermost hold of the calling thread (hold.cc); each links to the one
// outside it. Here so that entering a scope, and Holding(), asked on every
// push, are inline.
extern constinit thread_local HoldEntry* tls_top;
}  // namespace hold_detail

// The calling thread holds `op` (sorted lists of the op, which outlives the
// scope) or `hold` until the scope ends. Every op an engine thread runs
// enters one, so entering is three stores: the scopes of a thread form a
// list through their own frames, the op's lists are read only when a push
// or a wait is checked against them, and a serial is drawn only when a mark
// or a CurrentHold needs one.
class HoldScope {
 public:
  explicit HoldScope(const Opr* op) : entry_{0, op, nullptr, hold_detail::tls_top} {
    hold_detail::tls_top = &entry_;
  }
  explicit HoldScope(HoldRef hold);
  ~HoldScope() {
    TS_DCHECK(hold_detail::tls_top == &entry_);  // scopes end innermost first
    hold_detail::tls_top = entry_.outer;
  }
  HoldScope(const HoldScope&) = delete;
  HoldScope& operator=(const HoldScope&) = delete;

 private:
  HoldRef keep_;
  HoldEntry entry_;
};

// The innermost hold of the calling thread as a value another thread can
// enter, or null when it holds nothing.
HoldRef CurrentHold();
// True while the calling thread holds some op.
inline bool Holding() {
  return hold_detail::tls_top != nullptr;
}

// For a push with these normalised lists while the calling thread holds ops:
// the serial of the hold it must queue behind (a read of what a held op
// writes, a write of what one uses, or either on a variable marked by
// earlier work behind it), or 0.
uint64_t HoldAhead(std::span<const VarHandle> reads, std::span<const VarHandle> writes);
// The name of the calling thread's hold with that serial.
const char* HoldName(uint64_t serial);
// Marks the variables of such a push (under the push locks of every variable
// it names) when it must queue behind a held op.
void MarkIfBehindHold(std::span<const VarHandle> reads, std::span<const VarHandle> writes);

// Throws tessera::Error, naming the op, when a wait on `var` by the calling
// thread would wait for an op it holds. `for_write`: a write wait (it waits
// for readers too).
void CheckWaitAgainstHolds(VarHandle var, bool for_write, const char* what);

}  // namespace tessera::engine
