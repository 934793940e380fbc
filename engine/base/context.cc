#include "engine/base/context.h"

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
