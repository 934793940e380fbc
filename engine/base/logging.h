// Minimal leveled logging to stderr. The level comes from TESSERA_LOG_LEVEL
// (debug, info, warning, error; default warning) so a quiet shell stays quiet.
#pragma once

#include <sstream>

namespace tessera {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

LogLevel CurrentLogLevel();

namespace detail {
class LogLine {
 public:
  explicit LogLine(LogLevel level) : level_(level) {}
  ~LogLine();
  template <typename T>
  LogLine& operator<<(const T& v) {
    out_ << v;
    return *this;
  }

 private:
  LogLevel level_;
  std::ostringstream out_;
};
}  // namespace detail
}  // namespace tessera

#define TS_LOG(level)                                                 \
  if (::tessera::LogLevel::k##level < ::tessera::CurrentLogLevel()) { \
  } else                                                              \
    ::tessera::detail::LogLine(::tessera::LogLevel::k##level)
