// Internal: the two file formats behind serialize.h. serialize.cc stages the
// arrays on the host and picks the format; these functions only encode and
// decode bytes.
#pragma once

#include <string>
#include <vector>

#include "engine/ndarray/serialize.h"
#include "engine/ndarray/serialize_bytes.h"

namespace tessera::serialize {

// One array as the writers see it: host bytes ready to write.
struct HostArray {
  bool none = false;  // an empty slot: no shape, no data
  DType dtype = DType::kFloat32;
  Shape shape;
  Context ctx;  // where the array lives (recorded in the file)
  const void* data = nullptr;
  size_t bytes = 0;
};

// The first 8 bytes of a tessera file.
inline constexpr char kTesseraMagic[8] = {'\x89', 'T', 'S', 'N', 'D', '\r', '\n', '\x1a'};
inline constexpr uint32_t kTesseraVersion = 1;
// The first 8 bytes of an MXNet NDArray list (uint64 0x112).
inline constexpr uint64_t kMXNetListMagic = 0x112;

void WriteTessera(ByteWriter& w, const std::vector<HostArray>& arrays,
                  const std::vector<std::string>& names);
void WriteMXNet(ByteWriter& w, const std::vector<HostArray>& arrays,
                const std::vector<std::string>& names);

// Each reads the whole input, magic included.
LoadedArrays ReadTessera(ByteReader& r);
LoadedArrays ReadMXNet(ByteReader& r);

// A new cpu(0) array of `shape`/`dtype` filled with the next `bytes` of the
// input; `bytes` must have been checked against the bytes left.
NDArray ReadPayload(ByteReader& r, const Shape& shape, DType dtype, const char* what);

}  // namespace tessera::serialize
