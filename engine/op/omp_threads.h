// The OpenMP thread count of one call. OpenMP runtimes (and oneDNN's, which
// is OpenMP here) size a parallel region's team from the calling thread's
// omp_get_max_threads(), a per-thread setting: set it around the call and
// restore it after; other threads are unaffected.
#pragma once

#ifdef _OPENMP
#include <omp.h>
#endif

namespace tessera::op {

// The team size a call asking for `threads` gets: itself, or the calling
// thread's setting where it asks for none (<= 0).
inline int EffectiveOmpThreads(int threads) {
#ifdef _OPENMP
  return threads > 0 ? threads : omp_get_max_threads();
#else
  (void)threads;
  return 1;
#endif
}

class ScopedOmpThreads {
 public:
  // threads <= 0 leaves the setting alone.
  explicit ScopedOmpThreads(int threads) {
#ifdef _OPENMP
    saved_ = omp_get_max_threads();
    if (threads > 0 && threads != saved_) omp_set_num_threads(threads);
#else
    (void)threads;
#endif
  }
  ~ScopedOmpThreads() {
#ifdef _OPENMP
    if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
#endif
  }
  ScopedOmpThreads(const ScopedOmpThreads&) = delete;
  ScopedOmpThreads& operator=(const ScopedOmpThreads&) = delete;

 private:
  [[maybe_unused]] int saved_ = 1;
};

}  // namespace tessera::op
