#include "engine/base/format_bytes.h"

#include <cstdint>
#include <cstdio>

namespace tessera {

std::string FormatBytes(double bytes) {
  if (!(bytes >= 0)) bytes = 0;
  if (bytes < 1024) {
    const auto n = static_cast<uint64_t>(bytes);
    return std::to_string(n) + (n == 1 ? " byte" : " bytes");
  }
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  constexpr int kLast = sizeof(kUnits) / sizeof(kUnits[0]) - 1;
  double value = bytes / 1024;
  int unit = 0;
  while (value >= 1024 && unit < kLast) {
    value /= 1024;
    ++unit;
  }
  char buf[48];
  // One decimal, dropped when it is zero so round sizes read "64 KiB"; past
  // the last unit (only a wrong shape gets there) an exponent keeps it short.
  std::snprintf(buf, sizeof(buf), value < 1e6 ? "%.1f" : "%.3g", value);
  std::string s(buf);
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s + " " + kUnits[unit];
}

}  // namespace tessera
