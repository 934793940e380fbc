#include "engine/base/array_bytes.h"

#include "engine/base/error.h"
#include "engine/base/format_bytes.h"

namespace tessera {

void ThrowArrayTooLarge(const Shape& shape, DType dtype, std::string_view who) {
  for (int i = 0; i < shape.ndim(); ++i)
    TS_CHECK(shape[i] >= 0) << who << ": shape " << shape << " has a negative dimension ("
                            << shape[i] << " at axis " << i << ")";
  // In floating point: the true size may be far beyond what 64 bits hold.
  double bytes = static_cast<double>(DTypeSize(dtype));
  for (int64_t d : shape) bytes *= static_cast<double>(d);
  TS_THROW << who << ": shape " << shape << " " << DTypeName(dtype) << " needs "
           << FormatBytes(bytes) << ", more than the " << FormatBytes(double(kMaxArrayBytes))
           << " one array may hold";
}

}  // namespace tessera
