// Human-readable byte counts for error messages and statistics.
#pragma once

#include <string>

namespace tessera {

// "512 bytes", "64 KiB", "1.5 GiB": binary units, at most one decimal. A
// double, so that the size a wrong shape asks for (more than size_t holds,
// "64 EiB") can be told too; exact below 2^53 bytes.
std::string FormatBytes(double bytes);

}  // namespace tessera
