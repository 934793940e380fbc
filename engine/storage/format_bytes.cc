#include "engine/storage/format_bytes.h"

#include <cstdio>

namespace tessera::storage {

std::string FormatBytes(size_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  char buf[32];
  // One decimal, dropped when it is zero so round sizes read "64 KiB".
  std::snprintf(buf, sizeof(buf), "%.1f", value);
  std::string s(buf);
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s + " " + kUnits[unit];
}

}  // namespace tessera::storage
