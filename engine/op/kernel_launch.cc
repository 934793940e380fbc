#include "engine/op/kernel_launch.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace tessera::op {

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
