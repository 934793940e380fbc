// How many cores this process may run on.
#pragma once

namespace tessera {

// The CPUs of the process's affinity mask (what `mpirun` binding, `taskset`
// or a container's cpuset leave it), at least 1. std::thread's
// hardware_concurrency counts the machine's, so two processes bound to one
// core each would both start threads for every core.
int UsableCores();

}  // namespace tessera
