// Helpers shared by the C++ test suites.
#pragma once

#include <functional>
#include <string>

#include "engine/base/error.h"

namespace tessera::test {

// The message of the tessera::Error that `fn` throws, or "" when it throws none.
inline std::string ErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

inline bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace tessera::test
