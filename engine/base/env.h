// Typed access to TESSERA_* environment knobs. A malformed value is an error
// that names the variable, never a silent fallback.
#pragma once

#include <cstdint>
#include <string>

namespace tessera {

int64_t EnvInt(const char* name, int64_t fallback);
bool EnvBool(const char* name, bool fallback);
std::string EnvString(const char* name, const std::string& fallback);

}  // namespace tessera
