#include "engine/base/logging.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tessera {

LogLevel CurrentLogLevel() {
  static const LogLevel level = [] {
    const char* s = std::getenv("TESSERA_LOG_LEVEL");
    if (!s) return LogLevel::kWarning;
    if (!std::strcmp(s, "debug")) return LogLevel::kDebug;
    if (!std::strcmp(s, "info")) return LogLevel::kInfo;
    if (!std::strcmp(s, "error")) return LogLevel::kError;
    return LogLevel::kWarning;
  }();
  return level;
}

namespace detail {
LogLine::~LogLine() {
  static const char* const kNames[] = {"debug", "info", "warning", "error"};
  std::string line =
      "[tessera " + std::string(kNames[static_cast<int>(level_)]) + "] " + out_.str() + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);  // one write keeps lines whole
}
}  // namespace detail
}  // namespace tessera
