// Errors: every user mistake and every failed op becomes a tessera::Error that
// names what went wrong; nothing in the runtime aborts the process.
#pragma once

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
