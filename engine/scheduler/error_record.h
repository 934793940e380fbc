// What a failed op leaves behind. Every variable the op writes points at the
// same record, and keeps it until a later op writes the variable
// successfully: every wait on a poisoned variable rethrows it, and so does
// every wait on what was computed from one (the ops that read it are skipped
// and pass it on). `reported` only keeps WaitForAll from reporting an error
// a wait has already shown.
#pragma once

#include <atomic>
#include <exception>
#include <memory>
#include <string>

namespace tessera::engine {

struct ErrorRecord {
  std::exception_ptr error;
  std::string op_name;
  std::atomic<bool> reported{false};

  // Marks the record reported; true for the first caller.
  bool Claim() { return !reported.exchange(true, std::memory_order_acq_rel); }
  // Not yet shown by any wait.
  bool pending() const { return !reported.load(std::memory_order_acquire); }
  // Throws tessera::Error: the op's name, then the original message.
  [[noreturn]] void Rethrow(size_t more_errors = 0) const;
};

using ErrorRef = std::shared_ptr<ErrorRecord>;

ErrorRef MakeErrorRecord(std::exception_ptr error, const char* op_name);

}  // namespace tessera::engine
