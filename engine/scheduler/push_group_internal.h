// The engine's side of PushGroup (push_group.h): a block joins the group
// current on the pushing thread when it is made, and leaves it when the op
// ends.
#pragma once

#include "engine/scheduler/error_record.h"

namespace tessera::engine {

struct PushGroupState;

// The group open on this thread (the innermost), null if none.
inline thread_local PushGroupState* tls_push_group = nullptr;

// Counts an op into `group`.
void JoinPushGroup(PushGroupState* group);

// The group the calling thread's pushes join now, counted in; null if none.
// Inline: every push asks, and nearly always there is none.
inline PushGroupState* JoinCurrentPushGroup() {
  PushGroupState* g = tls_push_group;
  if (g) JoinPushGroup(g);
  return g;
}
// The op that joined `group` ended, with `err` when it failed or was skipped.
void LeavePushGroup(PushGroupState* group, const ErrorRef& err);

}  // namespace tessera::engine
