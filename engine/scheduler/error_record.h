// What a failed op leaves behind. Every variable the op writes points at the
// same record, so reporting the error at one wait clears it everywhere: it is
// rethrown once.
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

  // Marks the record reported; true for the one caller that gets to rethrow.
  bool Claim() { return !reported.exchange(true, std::memory_order_acq_rel); }
  bool pending() const { return !reported.load(std::memory_order_acquire); }
  // Throws tessera::Error: the op's name, then the original message.
  [[noreturn]] void Rethrow(size_t more_errors = 0) const;
};

using ErrorRef = std::shared_ptr<ErrorRecord>;

ErrorRef MakeErrorRecord(std::exception_ptr error, const char* op_name);

}  // namespace tessera::engine
