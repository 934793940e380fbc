#include "engine/base/env.h"

#include <cstdlib>
#include <cstring>

#include "engine/base/error.h"

namespace tessera {

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* s = std::getenv(name);
  if (!s || !*s) return fallback;
  char* end = nullptr;
  long long v = std::strtoll(s, &end, 10);
  TS_CHECK(*end == '\0') << "environment variable " << name << "='" << s << "' is not an integer";
  return v;
}

bool EnvBool(const char* name, bool fallback) {
  const char* s = std::getenv(name);
  if (!s || !*s) return fallback;
  if (!std::strcmp(s, "1") || !std::strcmp(s, "true") || !std::strcmp(s, "on")) return true;
  if (!std::strcmp(s, "0") || !std::strcmp(s, "false") || !std::strcmp(s, "off")) return false;
  TS_THROW << "environment variable " << name << "='" << s << "' is not a boolean (1/0)";
}

std::string EnvString(const char* name, const std::string& fallback) {
  const char* s = std::getenv(name);
  return (s && *s) ? std::string(s) : fallback;
}

}  // namespace tessera
