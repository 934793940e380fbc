// MXNet's NDArray-list format (.params files and nd.save), as MXNet's
// NDArray::Save/Load lay it out:
//   uint64 0x112, uint64 reserved, uint64 N, N records, uint64 K (0 or N),
//   K names (uint64 length + bytes).
// A record starts with a uint32 magic: V3 (np-shape semantics), V2 (storage
// type), V1 (int64 dims), or anything else, which pre-0.11 files used as the
// ndim of a shape with uint32 dims. docs/formats.md has the details.
//
// Tessera arrays are dense and have no zero-size dimension: sparse records
// (row_sparse, csr) are expanded to dense arrays, and MXNet's int16, uint16
// and uint32/uint64 data widen to int32/int64.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "engine/ndarray/serialize_formats.h"

namespace tessera::serialize {
namespace {

constexpr uint32_t kMagicV1 = 0xF993FAC8u;
constexpr uint32_t kMagicV2 = 0xF993FAC9u;
constexpr uint32_t kMagicV3 = 0xF993FACAu;

enum StorageType : int32_t { kDense = 0, kRowSparse = 1, kCSR = 2 };

// Expanding a sparse record may need far more memory than the file holds;
// past this the file is taken as bad rather than allocated.
constexpr uint64_t kMaxDenseBytes = uint64_t{4} << 30;
// Beyond any real array; keeps the size arithmetic far from overflow.
constexpr uint64_t kMaxPayloadBytes = uint64_t{1} << 56;

// MXNet type flags beyond tessera's dtypes, and what they load as.
constexpr int32_t kInt16 = 8, kUint16 = 9, kUint32 = 10, kUint64 = 11;

size_t FlagSize(int32_t flag) {
  switch (flag) {
    case kInt16:
    case kUint16:
      return 2;
    case kUint32:
      return 4;
    case kUint64:
      return 8;
    default:
      return DTypeSize(DType(flag));
  }
}

bool KnownFlag(int32_t flag) {
  return IsValidDType(flag) || (flag >= kInt16 && flag <= kUint64);
}

bool IntegerFlag(int32_t flag) {
  return (flag >= kInt16 && flag <= kUint64) || IsInteger(DType(flag));
}

DType LoadedDType(int32_t flag) {
  if (flag == kInt16 || flag == kUint16) return DType::kInt32;
  if (flag == kUint32 || flag == kUint64) return DType::kInt64;
  return DType(flag);
}

// Element i of a raw buffer of integer type `flag`, as int64.
int64_t IntAt(const char* raw, int32_t flag, size_t i) {
  auto get = [&](auto zero) {
    decltype(zero) v;
    std::memcpy(&v, raw + i * sizeof(v), sizeof(v));
    return v;
  };
  switch (flag) {
    case int32_t(DType::kUint8):
      return get(uint8_t{});
    case int32_t(DType::kInt8):
      return get(int8_t{});
    case int32_t(DType::kInt32):
      return get(int32_t{});
    case int32_t(DType::kInt64):
      return get(int64_t{});
    case kInt16:
      return get(int16_t{});
    case kUint16:
      return get(uint16_t{});
    case kUint32:
      return get(uint32_t{});
    default: {
      // uint64: values past int64's range are reported by the caller as negative.
      const uint64_t v = get(uint64_t{});
      return v > uint64_t(INT64_MAX) ? -1 : int64_t(v);
    }
  }
}

struct RawShape {
  bool none = false;
  std::vector<int64_t> dims;
};

// Everything about one record that is known before its payload.
class RecordReader {
 public:
  explicit RecordReader(ByteReader& r) : r_(r) {}

  // Returns a none NDArray for an empty slot.
  NDArray Read(Context* saved_ctx, uint32_t* magic_out);

 private:
  void CheckNdim(uint64_t at, int64_t ndim, const char* what) {
    if (ndim < 0 || ndim > Shape::kMaxNdim)
      r_.Corrupt(
          at, what,
          "ndim " + std::to_string(ndim) + " (at most " + std::to_string(Shape::kMaxNdim) + ")");
  }
  // V1/V2/V3 shape: int32 ndim, int64 dims. V3 marks unknown with -1.
  RawShape ReadShape(bool v3, const char* what) {
    RawShape s;
    const uint64_t at = r_.offset();
    const int32_t ndim = r_.I32(what);
    if (v3 && ndim == -1) {
      s.none = true;
      return s;
    }
    CheckNdim(at, ndim, what);
    if (!v3 && ndim == 0) s.none = true;
    for (int i = 0; i < ndim; ++i) {
      const uint64_t dim_at = r_.offset();
      const int64_t d = r_.I64(what);
      if (v3 && d == -1) {
        s.none = true;
      } else if (d < 0) {
        r_.Corrupt(dim_at, what, "negative dimension " + std::to_string(d));
      }
      s.dims.push_back(d);
    }
    // V3 (numpy semantics): ndim 0 is a scalar, tessera's shape (1).
    if (v3 && ndim == 0) s.dims = {1};
    return s;
  }
  // A shape tessera can hold: every dimension at least 1.
  Shape DenseShape(uint64_t at, const RawShape& s) {
    for (int64_t d : s.dims)
      if (d == 0)
        r_.Corrupt(at, "shape",
                   "shape " + Shape(s.dims).ToString() +
                       " has a zero-size dimension, which tessera arrays cannot have");
    return Shape(s.dims);
  }
  uint64_t PayloadBytes(uint64_t at, const std::vector<int64_t>& dims, int32_t flag,
                        const char* what) {
    uint64_t bytes = 0;
    if (!CheckedByteCount(dims, FlagSize(flag), kMaxPayloadBytes, &bytes))
      r_.Corrupt(at, what, "shape " + Shape(dims).ToString() + " is too large");
    // The caller checks the bytes are there (Need) before allocating.
    return bytes;
  }
  std::vector<char> ReadRaw(uint64_t bytes, const char* what) {
    r_.Need(bytes, what);
    std::vector<char> raw(static_cast<size_t>(bytes));
    r_.Bytes(raw.data(), bytes, what);
    return raw;
  }
  NDArray FromRaw(const std::vector<char>& raw, const Shape& shape, int32_t flag, uint64_t at);
  NDArray ReadSparse(int32_t stype, const RawShape& storage, const Shape& shape, int32_t flag,
                     uint64_t shape_at);

  ByteReader& r_;
};

NDArray RecordReader::FromRaw(const std::vector<char>& raw, const Shape& shape, int32_t flag,
                              uint64_t at) {
  const DType dtype = LoadedDType(flag);
  NDArray a(shape, Context::CPU(), dtype);
  char* dst = static_cast<char*>(a.data().dptr_);
  const size_t n = static_cast<size_t>(shape.Size());
  if (dtype == DType(flag)) {
    std::memcpy(dst, raw.data(), raw.size());
  } else if (dtype == DType::kInt32) {
    for (size_t i = 0; i < n; ++i) {
      const int32_t v = static_cast<int32_t>(IntAt(raw.data(), flag, i));
      std::memcpy(dst + 4 * i, &v, 4);
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      const int64_t v = IntAt(raw.data(), flag, i);
      if (v < 0 && flag == kUint64)
        r_.Corrupt(at, "data",
                   "uint64 element " + std::to_string(i) +
                       " does not fit in int64, tessera's widest integer type");
      std::memcpy(dst + 8 * i, &v, 8);
    }
  }
  return a;
}

NDArray RecordReader::ReadSparse(int32_t stype, const RawShape& storage, const Shape& shape,
                                 int32_t flag, uint64_t shape_at) {
  const int nad = stype == kCSR ? 2 : 1;
  int32_t aux_flag[2] = {0, 0};
  RawShape aux_shape[2];
  uint64_t aux_at[2] = {0, 0};
  for (int k = 0; k < nad; ++k) {
    aux_at[k] = r_.offset();
    aux_flag[k] = r_.I32("aux dtype");
    if (!KnownFlag(aux_flag[k]) || !IntegerFlag(aux_flag[k]))
      r_.Corrupt(aux_at[k], "aux dtype",
                 "sparse index dtype flag " + std::to_string(aux_flag[k]) + " is not an integer");
    aux_shape[k] = ReadShape(false, "aux shape");
    if (aux_shape[k].dims.size() != 1)
      r_.Corrupt(aux_at[k], "aux shape", "sparse indices must be one-dimensional");
  }
  // Consistency of storage shape, logical shape and index counts.
  const int64_t nnz = storage.dims.empty() ? 0 : storage.dims[0];
  const char* bad = nullptr;
  if (stype == kRowSparse) {
    if (storage.dims.size() != static_cast<size_t>(shape.ndim()) ||
        !std::equal(storage.dims.begin() + 1, storage.dims.end(), shape.begin() + 1))
      bad = "row_sparse storage shape does not match the shape's trailing dimensions";
    else if (aux_shape[0].dims[0] != nnz)
      bad = "row_sparse index count differs from the stored rows";
  } else {
    if (shape.ndim() != 2 || storage.dims.size() != 1)
      bad = "csr needs a 2-d shape and a 1-d storage shape";
    else if (aux_shape[0].dims[0] != shape[0] + 1)
      bad = "csr indptr length is not rows + 1";
    else if (aux_shape[1].dims[0] != nnz)
      bad = "csr index count differs from the stored values";
  }
  if (bad) r_.Corrupt(shape_at, "sparse shapes", bad);
  uint64_t dense_bytes = 0;
  if (!CheckedByteCount(shape.ToVector(), FlagSize(flag), kMaxDenseBytes, &dense_bytes))
    r_.Corrupt(shape_at, "shape",
               "expanding the sparse array " + shape.ToString() + " needs more than " +
                   std::to_string(kMaxDenseBytes >> 30) + " GiB");
  const uint64_t data_at = r_.offset();
  const std::vector<char> values =
      ReadRaw(PayloadBytes(data_at, storage.dims, flag, "data"), "data");
  std::vector<char> aux[2];
  for (int k = 0; k < nad; ++k)
    aux[k] =
        ReadRaw(PayloadBytes(r_.offset(), aux_shape[k].dims, aux_flag[k], "aux data"), "aux data");

  const size_t es = FlagSize(flag);
  std::vector<char> dense(static_cast<size_t>(dense_bytes), 0);
  if (stype == kRowSparse) {
    const size_t row_bytes = static_cast<size_t>(shape.ProdRange(1, shape.ndim())) * es;
    for (int64_t k = 0; k < nnz; ++k) {
      const int64_t row = IntAt(aux[0].data(), aux_flag[0], size_t(k));
      if (row < 0 || row >= shape[0])
        r_.Corrupt(aux_at[0], "aux data",
                   "row_sparse row index " + std::to_string(row) + " is out of range for shape " +
                       shape.ToString());
      std::memcpy(dense.data() + size_t(row) * row_bytes, values.data() + size_t(k) * row_bytes,
                  row_bytes);
    }
  } else {
    const int64_t rows = shape[0], cols = shape[1];
    int64_t prev = 0;
    for (int64_t i = 0; i <= rows; ++i) {
      const int64_t p = IntAt(aux[0].data(), aux_flag[0], size_t(i));
      if ((i == 0 && p != 0) || p < prev || p > nnz || (i == rows && p != nnz))
        r_.Corrupt(aux_at[0], "aux data", "csr indptr is not a valid row partition");
      for (int64_t j = prev; j < p; ++j) {
        const int64_t col = IntAt(aux[1].data(), aux_flag[1], size_t(j));
        if (col < 0 || col >= cols)
          r_.Corrupt(aux_at[1], "aux data",
                     "csr column index " + std::to_string(col) + " is out of range for shape " +
                         shape.ToString());
        std::memcpy(dense.data() + size_t((i - 1) * cols + col) * es,
                    values.data() + size_t(j) * es, es);
      }
      prev = p;
    }
  }
  return FromRaw(dense, shape, flag, data_at);
}

NDArray RecordReader::Read(Context* saved_ctx, uint32_t* magic_out) {
  *saved_ctx = Context::CPU();
  const uint64_t start = r_.offset();
  const uint32_t magic = r_.U32("record magic");
  *magic_out = magic;
  int32_t stype = kDense;
  RawShape storage, raw;
  const uint64_t shape_at = r_.offset();
  if (magic == kMagicV2 || magic == kMagicV3) {
    const uint64_t at = r_.offset();
    stype = r_.I32("storage type");
    if (stype != kDense && stype != kRowSparse && stype != kCSR)
      r_.Corrupt(at, "storage type", "unknown storage type " + std::to_string(stype));
    if (magic == kMagicV3 && stype != kDense)
      r_.Corrupt(at, "storage type", "V3 records are dense only");
    if (stype != kDense) storage = ReadShape(false, "storage shape");
    raw = ReadShape(magic == kMagicV3, "shape");
  } else if (magic == kMagicV1) {
    raw = ReadShape(false, "shape");
  } else {
    // Before 0.11 there was no magic: the word is ndim, the dims uint32.
    if (magic > uint32_t(Shape::kMaxNdim))
      r_.Corrupt(
          start, "record magic",
          "0x" +
              [&] {
                char hex[9];
                std::snprintf(hex, sizeof(hex), "%08x", magic);
                return std::string(hex);
              }() +
              " is neither a record magic (V1, V2, V3) nor a legacy ndim (at most " +
              std::to_string(Shape::kMaxNdim) + ")");
    raw.none = magic == 0;
    for (uint32_t i = 0; i < magic; ++i) raw.dims.push_back(r_.U32("shape"));
  }
  if (raw.none) return NDArray();
  const Shape shape = DenseShape(shape_at, raw);

  const uint64_t ctx_at = r_.offset();
  const int32_t dev_type = r_.I32("context");
  const int32_t dev_id = r_.I32("context");
  // 5 is MXNet's cpu_shared (shared-memory CPU arrays).
  if (dev_type != 1 && dev_type != 2 && dev_type != 3 && dev_type != 5)
    r_.Corrupt(ctx_at, "context", "unknown device type " + std::to_string(dev_type));
  *saved_ctx = {dev_type == 5 ? DeviceType::kCPU : DeviceType(dev_type), dev_id < 0 ? 0 : dev_id};
  const uint64_t flag_at = r_.offset();
  const int32_t flag = r_.I32("dtype");
  if (!KnownFlag(flag)) r_.Corrupt(flag_at, "dtype", "unknown dtype flag " + std::to_string(flag));

  if (stype != kDense) return ReadSparse(stype, storage, shape, flag, shape_at);
  const uint64_t data_at = r_.offset();
  const uint64_t bytes = PayloadBytes(shape_at, raw.dims, flag, "data");
  if (LoadedDType(flag) == DType(flag)) {
    r_.Need(bytes, "data");
    return ReadPayload(r_, shape, DType(flag), "data");
  }
  return FromRaw(ReadRaw(bytes, "data"), shape, flag, data_at);
}

std::string Variant(bool v1, bool v2, bool v3, bool legacy) {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (on) s += (s.empty() ? "" : "+") + std::string(name);
  };
  add(v3, "V3");
  add(v2, "V2");
  add(v1, "V1");
  add(legacy, "legacy");
  if (s.empty()) return "mxnet (empty list)";
  return "mxnet " + s + " records" + (legacy ? " (before 0.11)" : "");
}

}  // namespace

void WriteMXNet(ByteWriter& w, const std::vector<HostArray>& arrays,
                const std::vector<std::string>& names) {
  w.U64(kMXNetListMagic);
  w.U64(0);
  w.U64(arrays.size());
  for (const HostArray& a : arrays) {
    w.U32(kMagicV2);
    w.I32(kDense);
    w.I32(a.none ? 0 : a.shape.ndim());
    if (a.none) continue;
    for (int64_t d : a.shape) w.I64(d);
    // MXNet records the array's own context and loads to it where it can.
    w.I32(int32_t(a.ctx.dev_type));
    w.I32(a.ctx.dev_id);
    w.I32(int32_t(a.dtype));
    w.Bytes(a.data, a.bytes);
  }
  w.U64(names.size());
  for (const std::string& n : names) w.String(n);
}

LoadedArrays ReadMXNet(ByteReader& r) {
  LoadedArrays out;
  out.format = Format::kMXNet;
  r.SetItem("the file header");
  if (r.U64("magic") != kMXNetListMagic) r.Corrupt(0, "magic", "not an MXNet NDArray list");
  r.U64("reserved");
  const uint64_t count_at = r.offset();
  const uint64_t count = r.U64("array count");
  // Every record is at least 4 bytes, and the name count follows them.
  if (count > r.remaining() / 4)
    r.Corrupt(count_at, "array count",
              std::to_string(count) + " arrays cannot fit in the " + std::to_string(r.remaining()) +
                  " bytes left (truncated file?)");
  bool v1 = false, v2 = false, v3 = false, legacy = false;
  RecordReader records(r);
  for (uint64_t i = 0; i < count; ++i) {
    r.SetItem("array " + std::to_string(i));
    Context ctx;
    uint32_t magic = 0;
    out.arrays.push_back(records.Read(&ctx, &magic));
    out.saved_contexts.push_back(ctx);
    v1 |= magic == kMagicV1;
    v2 |= magic == kMagicV2;
    v3 |= magic == kMagicV3;
    legacy |= magic != kMagicV1 && magic != kMagicV2 && magic != kMagicV3;
  }
  r.SetItem("the name list");
  const uint64_t names_at = r.offset();
  const uint64_t n_names = r.U64("name count");
  if (n_names != 0 && n_names != count)
    r.Corrupt(names_at, "name count",
              std::to_string(n_names) + " names for " + std::to_string(count) +
                  " arrays (must be 0 or equal)");
  for (uint64_t i = 0; i < n_names; ++i) {
    r.SetItem("name " + std::to_string(i));
    out.names.push_back(r.String(""));
  }
  r.SetItem("");
  r.ExpectEnd();
  out.variant = Variant(v1, v2, v3, legacy);
  return out;
}

}  // namespace tessera::serialize
