#include "ops/registry/kernel_launch.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include "engine/base/env.h"
#include "engine/scheduler/engine.h"

namespace tessera::op {

int OmpThreads() {
  static const int threads = [] {
#ifdef _OPENMP
    // Engine CPU workers x threads per op stays within the cores.
    const int n =
        static_cast<int>(EnvInt("TESSERA_OMP_THREADS", engine::Engine::Get()->OpThreads()));
    TS_CHECK(n >= 1) << "TESSERA_OMP_THREADS must be at least 1, got " << n;
    return n;
#else
    return 1;
#endif
  }();
  return threads;
}

int OmpThreadIndex() {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

int OmpThreadCount() {
#ifdef _OPENMP
  return omp_get_num_threads();
#else
  return 1;
#endif
}

}  // namespace tessera::op
