// Tessera's own NDArray file format (docs/formats.md): a header with magic,
// version, flags and count, then one record per array, each ending in the
// CRC32 of its bytes so corruption is found and located.
#include <cstring>

#include "engine/ndarray/serialize_formats.h"

namespace tessera::serialize {
namespace {

constexpr uint32_t kFlagNamed = 1;
constexpr uint32_t kKnownFlags = kFlagNamed;
constexpr int32_t kNoneDType = -1;
// The smallest record: a none slot without a name.
constexpr uint64_t kMinRecordBytes = 4 + 4 + 4 + 4 + 8 + 4;
// Beyond any real array; keeps the size arithmetic far from overflow.
constexpr uint64_t kMaxPayloadBytes = uint64_t{1} << 56;

bool ValidDeviceType(int32_t t) {
  return t == int32_t(DeviceType::kCPU) || t == int32_t(DeviceType::kGPU) ||
         t == int32_t(DeviceType::kCPUPinned);
}

}  // namespace

void WriteTessera(ByteWriter& w, const std::vector<HostArray>& arrays,
                  const std::vector<std::string>& names) {
  w.ResetCrc();
  w.Bytes(kTesseraMagic, sizeof(kTesseraMagic));
  w.U32(kTesseraVersion);
  w.U32(names.empty() ? 0 : kFlagNamed);
  w.U64(arrays.size());
  w.U32(w.crc());
  for (size_t i = 0; i < arrays.size(); ++i) {
    const HostArray& a = arrays[i];
    w.ResetCrc();
    if (!names.empty()) w.String(names[i]);
    w.I32(a.none ? kNoneDType : int32_t(a.dtype));
    w.I32(a.none ? 0 : a.shape.ndim());
    if (!a.none)
      for (int64_t d : a.shape) w.I64(d);
    w.I32(int32_t(a.ctx.dev_type));
    w.I32(a.ctx.dev_id);
    w.U64(a.none ? 0 : a.bytes);
    if (!a.none) w.Bytes(a.data, a.bytes);
    w.U32(w.crc());
  }
}

LoadedArrays ReadTessera(ByteReader& r) {
  LoadedArrays out;
  out.format = Format::kTessera;
  r.SetItem("the file header");
  r.ResetCrc();
  char magic[sizeof(kTesseraMagic)];
  r.Bytes(magic, sizeof(magic), "magic");
  if (std::memcmp(magic, kTesseraMagic, sizeof(magic)) != 0)
    r.Corrupt(0, "magic", "not a tessera NDArray file");
  const uint64_t version_at = r.offset();
  const uint32_t version = r.U32("version");
  if (version == 0 || version > kTesseraVersion)
    r.Corrupt(version_at, "version",
              "format version " + std::to_string(version) + "; this build reads versions 1 to " +
                  std::to_string(kTesseraVersion) +
                  (version > kTesseraVersion ? " (written by a newer tessera?)" : ""));
  const uint64_t flags_at = r.offset();
  const uint32_t flags = r.U32("flags");
  if (flags & ~kKnownFlags)
    r.Corrupt(flags_at, "flags", "unknown flag bits " + std::to_string(flags));
  const bool named = flags & kFlagNamed;
  const uint64_t count_at = r.offset();
  const uint64_t count = r.U64("array count");
  const uint32_t header_crc = r.crc();
  if (r.U32("checksum") != header_crc) r.Corrupt(count_at + 8, "checksum", "CRC32 mismatch");
  if (count > r.remaining() / kMinRecordBytes)
    r.Corrupt(count_at, "array count",
              std::to_string(count) + " arrays cannot fit in the " + std::to_string(r.remaining()) +
                  " bytes left (truncated file?)");
  out.variant = "tessera v" + std::to_string(version);

  for (uint64_t i = 0; i < count; ++i) {
    r.SetItem("array " + std::to_string(i));
    r.ResetCrc();
    const uint64_t record_at = r.offset();
    if (named) out.names.push_back(r.String("name"));
    const uint64_t dtype_at = r.offset();
    const int32_t flag = r.I32("dtype");
    const bool none = flag == kNoneDType;
    if (!none && !IsValidDType(flag))
      r.Corrupt(dtype_at, "dtype", "unknown dtype flag " + std::to_string(flag));
    const uint64_t ndim_at = r.offset();
    const int32_t ndim = r.I32("ndim");
    if (none ? ndim != 0 : (ndim < 1 || ndim > Shape::kMaxNdim))
      r.Corrupt(ndim_at, "ndim",
                "ndim " + std::to_string(ndim) +
                    (none ? " for an empty slot (must be 0)"
                          : " (must be 1 to " + std::to_string(Shape::kMaxNdim) + ")"));
    std::vector<int64_t> dims(static_cast<size_t>(ndim));
    for (int k = 0; k < ndim; ++k) {
      const uint64_t at = r.offset();
      dims[k] = r.I64("shape");
      if (dims[k] < 1) r.Corrupt(at, "shape", "dimension " + std::to_string(dims[k]));
    }
    const uint64_t ctx_at = r.offset();
    const int32_t dev_type = r.I32("context");
    const int32_t dev_id = r.I32("context");
    if (!ValidDeviceType(dev_type) || dev_id < 0 || dev_id > 0xffff)
      r.Corrupt(ctx_at, "context",
                "device type " + std::to_string(dev_type) + " id " + std::to_string(dev_id));
    const uint64_t bytes_at = r.offset();
    const uint64_t bytes = r.U64("byte count");
    uint64_t expected = 0;
    if (!none && !CheckedByteCount(dims, DTypeSize(DType(flag)), kMaxPayloadBytes, &expected))
      r.Corrupt(
          ndim_at, "shape",
          "shape " + Shape(dims).ToString() + " of " + DTypeName(DType(flag)) + " is too large");
    if (bytes != expected)
      r.Corrupt(
          bytes_at, "byte count",
          std::to_string(bytes) + " bytes, the shape and dtype need " + std::to_string(expected));
    // Nothing is allocated before the file is known to hold the payload.
    r.Need(bytes, "data");
    if (none) {
      out.arrays.emplace_back();
    } else {
      out.arrays.push_back(ReadPayload(r, Shape(dims), DType(flag), "data"));
    }
    out.saved_contexts.push_back({DeviceType(dev_type), dev_id});
    const uint32_t crc = r.crc();
    if (r.U32("checksum") != crc)
      r.Corrupt(
          record_at, "checksum",
          "CRC32 mismatch: the record from byte " + std::to_string(record_at) + " is damaged");
  }
  r.SetItem("");
  r.ExpectEnd();
  return out;
}

}  // namespace tessera::serialize
