// Human-readable byte counts for error messages and statistics.
#pragma once

#include <cstddef>
#include <string>

namespace tessera::storage {

// "512 bytes", "64 KiB", "1.5 GiB": binary units, at most one decimal.
std::string FormatBytes(size_t bytes);

}  // namespace tessera::storage
