#include "engine/base/context.h"
#include "engine/base/error.h"

namespace tessera {

std::string Context::ToString() const {
  const char* kind = dev_type == DeviceType::kGPU         ? "gpu"
                     : dev_type == DeviceType::kCPUPinned ? "cpu_pinned"
                                                          : "cpu";
  return std::string(kind) + "(" + std::to_string(dev_id) + ")";
}

#ifndef TESSERA_WITH_CUDA
int NumGPUs() {
  return 0;
}
bool BuiltWithCUDA() {
  return false;
}
#endif

}  // namespace tessera

namespace tessera {

Context Context::Parse(std::string_view text) {
  auto parse = [&](std::string_view prefix, DeviceType type, Context* out) {
    if (!text.starts_with(prefix)) return false;
    std::string_view rest = text.substr(prefix.size());
    int id = 0;
    if (!rest.empty()) {
      if (rest.front() != '(' || rest.back() != ')') return false;
      rest = rest.substr(1, rest.size() - 2);
      if (rest.empty()) return false;
      for (char c : rest) {
        if (c < '0' || c > '9') return false;
        id = id * 10 + (c - '0');
        if (id > 1 << 20) return false;
      }
    }
    *out = {type, id};
    return true;
  };
  Context c;
  if (parse("cpu_pinned", DeviceType::kCPUPinned, &c) || parse("gpu", DeviceType::kGPU, &c) ||
      parse("cpu", DeviceType::kCPU, &c))
    return c;
  TS_THROW << "invalid context '" << text << "' (expected cpu(i), gpu(i) or cpu_pinned(i))";
}

}  // namespace tessera
