// Errors: every user mistake and every failed op becomes a tessera::Error that
// names what went wrong; nothing in the runtime aborts the process.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace tessera {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

namespace detail {

// Collects a message with operator<< and throws it when the full expression
// ends. Throwing from a destructor is deliberate: the builder is always a
// temporary, never alive during unwinding.
class ErrorBuilder {
 public:
  ErrorBuilder() = default;
  ErrorBuilder(const char* file, int line, const char* cond) {
    where_ << "internal check failed: " << cond << " (" << file << ":" << line << ")";
  }
  ErrorBuilder(const ErrorBuilder&) = delete;
  ErrorBuilder& operator=(const ErrorBuilder&) = delete;
  [[noreturn]] ~ErrorBuilder() noexcept(false) {
    std::string msg = msg_.str();
    throw Error(msg.empty() ? where_.str() : msg);
  }
  template <typename T>
  ErrorBuilder& operator<<(const T& v) {
    msg_ << v;
    return *this;
  }

 private:
  std::ostringstream where_, msg_;
};

// A broken invariant of the runtime itself (never a user's mistake): the
// state is already wrong, and unwinding through it would hide where.
[[noreturn]] inline void DCheckFailed(const char* cond, const char* file, int line) {
  std::fprintf(stderr, "tessera: invariant broken: %s (%s:%d)\n", cond, file, line);
  std::fflush(stderr);
  std::abort();
}

}  // namespace detail
}  // namespace tessera

// TS_CHECK(cond) << "message";  throws tessera::Error(message) when cond is false.
// Without a message the error names the condition and its source location.
#define TS_CHECK(cond) \
  if (cond) {          \
  } else               \
    ::tessera::detail::ErrorBuilder(__FILE__, __LINE__, #cond)

// TS_THROW << "message";  always throws.
#define TS_THROW ::tessera::detail::ErrorBuilder()

// TS_DCHECK(cond);  an invariant of the runtime's own code, such as a count
// that never goes negative. Checked where TESSERA_DCHECK is defined (Debug
// and sanitizer builds: a failure prints the condition and aborts); compiled
// out elsewhere, where the condition is parsed but never evaluated, so it
// costs a release build nothing and cannot go stale.
#ifdef TESSERA_DCHECK
#define TS_DCHECK(cond) \
  ((cond) ? (void)0 : ::tessera::detail::DCheckFailed(#cond, __FILE__, __LINE__))
#else
#define TS_DCHECK(cond) ((void)sizeof(!(cond)))
#endif
