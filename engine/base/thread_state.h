// Per-thread facts the engine publishes for lower layers without them
// depending on the scheduler.
#pragma once

namespace tessera {

// How deep this thread is in op execution: 0 outside any engine op, 1 inside
// one, 2 when an op that waits on the engine runs another ready op inline
// while it waits, and so on. Per-thread resources (temp space) are keyed by it
// so a nested op never reuses the space of the op it interrupted.
inline int& OpDepth() {
  thread_local int depth = 0;
  return depth;
}

}  // namespace tessera
