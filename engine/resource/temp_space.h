// Scratch memory for ops (im2col buffers, cuDNN workspaces, reductions).
// Each (thread, device, op depth) owns one growable buffer, so an op needs no
// engine variable for its scratch: no other op can touch it while it runs.
// The op depth (tessera::OpDepth()) separates an op from one the engine runs
// inline on the same thread while the first is waiting.
//
// On a GPU the ops sharing a buffer are those of one engine worker thread,
// which all queue on that worker's stream, so stream order keeps a kernel
// still reading the buffer ahead of the next op's writes.
#pragma once

#include <cstddef>

#include "engine/base/context.h"

namespace tessera::resource {

class TempSpace {
 public:
  // A buffer of at least `bytes` on ctx (64-byte aligned on CPU), valid until
  // the calling op ends or until this thread's next Get at the same depth on
  // the same device, whichever comes first: ask once per op for the total
  // you need. It grows when a larger size is asked for (the old contents are
  // not kept) and never shrinks until ReleaseAll. Null when bytes == 0. A
  // thread's buffers return to Storage when the thread exits.
  static void* Get(Context ctx, size_t bytes);

  // Lets every thread's buffers go: each is returned to Storage at its
  // thread's next Get for that (device, depth), then sized afresh.
  static void ReleaseAll();
};

}  // namespace tessera::resource
