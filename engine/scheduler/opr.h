// The engine's internal op records. An Opr is what was pushed (function,
// normalised variable lists, properties); an OprBlock is one pending
// execution of it, counting the variables it still waits for.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "engine/base/small_vector.h"
#include "engine/scheduler/engine.h"
#include "engine/scheduler/var.h"

namespace tessera::engine {

class WorkerPool;
class Parker;
struct OprBlock;

class Opr {
 public:
  SyncFn sync_fn;    // may be empty: a no-op that only orders variables
  AsyncFn async_fn;  // set when is_async
  bool is_async = false;
  SmallVector<VarHandle, 4> const_vars;   // read, none also in mutate_vars
  SmallVector<VarHandle, 4> mutate_vars;  // written
  FnProperty prop = FnProperty::kNormal;
  bool temporary = true;    // made by PushSync/PushAsync, freed after its run
  bool always_run = false;  // waiters and deletions run even on poisoned variables
  const char* name = "unnamed";
  // Persistent operators without variables: one for the handle plus one per
  // push in flight, on a cache line of its own (pushers and workers both
  // write it). An operator with variables needs no count: its deletion is
  // an op on all of them, which runs after every push. Null otherwise.
  struct alignas(64) RefCount {
    std::atomic<int> n{1};
  };
  std::unique_ptr<RefCount> refs;
  // A temporary op lives inside the block that runs it (one allocation per
  // push, and fewer cache lines crossing from the pushing thread to the worker).
  OprBlock* home = nullptr;
};

struct OprBlock {
  Opr* opr = nullptr;
  Context ctx;
  int priority = 0;
  WorkerPool* pool = nullptr;  // where it runs; null for inline ops
  std::atomic<int> wait{0};    // variables not yet granted, plus one while pushing
  // Naive engine: the pushing thread waits for these.
  Parker* pusher = nullptr;
  std::atomic<bool>* ready_flag = nullptr;
  std::atomic<bool>* done_flag = nullptr;
  const char* lane = "";  // profiler, async ops
  uint64_t begin_ns = 0;  // profiler, async ops
  uint32_t thread = 0;
  Opr temp_opr;         // the op itself when it is temporary
  VarEntry entries[2];  // queue places for the op's first two variables
};

}  // namespace tessera::engine
