// What every harness shares: the runtime set up for fuzzing, and the rule
// each one checks. A reader given any bytes must return or raise a
// tessera::Error; anything else that escapes (std::bad_alloc, a
// std::length_error, a nlohmann exception) reaches libFuzzer as an uncaught
// exception and is reported as a crash, like a signal or a sanitizer report.
#pragma once

#include <cstdlib>

// Runs pushed work on the calling thread: no worker threads, so every fault
// is on the stack libFuzzer reports, and runs repeat exactly.
inline void FuzzSetUp() {
  setenv("TESSERA_ENGINE", "naive", 1);
  setenv("TESSERA_LOG_LEVEL", "error", 1);
}
