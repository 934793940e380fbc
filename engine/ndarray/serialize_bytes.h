// The byte level of NDArray files: little-endian integers, CRC32, and a
// reader that checks every read against the bytes left, so a truncated or
// corrupt file raises an error naming the byte offset and the field instead
// of reading past the end or allocating what a bad count asks for.
#pragma once

#include <bit>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/base/error.h"

namespace tessera::serialize {

// Array payloads are written as the bytes in memory; both formats are
// little-endian.
static_assert(std::endian::native == std::endian::little,
              "NDArray files are little-endian; big-endian hosts need byte swapping here");

// CRC-32 (IEEE 802.3, the polynomial of zlib's crc32): pass the previous
// value to continue a running checksum.
uint32_t Crc32(const void* data, size_t n, uint32_t crc = 0);

// Where written bytes go.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual void Write(const void* data, size_t n) = 0;
};

class StringSink : public ByteSink {
 public:
  explicit StringSink(std::string* out) : out_(out) {}
  void Write(const void* data, size_t n) override {
    out_->append(static_cast<const char*>(data), n);
  }

 private:
  std::string* out_;
};

// Encodes integers little-endian and keeps a running CRC32 of what it wrote.
class ByteWriter {
 public:
  explicit ByteWriter(ByteSink* sink) : sink_(sink) {}
  void Bytes(const void* data, size_t n);
  void U32(uint32_t v) { Int(v); }
  void I32(int32_t v) { Int(static_cast<uint32_t>(v)); }
  void U64(uint64_t v) { Int(v); }
  void I64(int64_t v) { Int(static_cast<uint64_t>(v)); }
  // uint64 length, then the bytes.
  void String(std::string_view s);

  uint32_t crc() const { return crc_; }
  void ResetCrc() { crc_ = 0; }

 private:
  template <typename U>
  void Int(U v) {
    unsigned char b[sizeof(U)];
    for (size_t i = 0; i < sizeof(U); ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
    Bytes(b, sizeof(U));
  }
  ByteSink* sink_;
  uint32_t crc_ = 0;
};

// Where read bytes come from: a whole size known up front.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to n bytes; fewer only at the end (or on an I/O error).
  virtual size_t Read(void* data, size_t n) = 0;
};

class MemorySource : public ByteSource {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  size_t Read(void* data, size_t n) override;

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

class FileSource : public ByteSource {
 public:
  explicit FileSource(std::FILE* f) : f_(f) {}
  size_t Read(void* data, size_t n) override { return std::fread(data, 1, n, f_); }

 private:
  std::FILE* f_;
};

// Decodes little-endian fields. `what` names the field in errors; SetItem
// names the part of the file ("array 3", "the name list").
//   "<source>: truncated at byte 52 while reading array 3 shape (needs 8 bytes, 2 left)"
//   "<source>: corrupt at byte 48 (array 3 dtype): unknown dtype flag 99"
class ByteReader {
 public:
  ByteReader(ByteSource* src, uint64_t size, std::string source)
      : src_(src), size_(size), source_(std::move(source)) {}

  void SetItem(std::string item) { item_ = std::move(item); }
  const std::string& source() const { return source_; }
  uint64_t offset() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }
  uint64_t size() const { return size_; }

  void Bytes(void* data, uint64_t n, const char* what);
  uint32_t U32(const char* what) { return Int<uint32_t>(what); }
  int32_t I32(const char* what) { return static_cast<int32_t>(Int<uint32_t>(what)); }
  uint64_t U64(const char* what) { return Int<uint64_t>(what); }
  int64_t I64(const char* what) { return static_cast<int64_t>(Int<uint64_t>(what)); }
  // uint64 length (checked against the bytes left), then the bytes.
  std::string String(const char* what);
  // Raises the truncation error unless n more bytes are left.
  void Need(uint64_t n, const char* what) const;
  // Raises an error unless the whole input was read.
  void ExpectEnd() const;

  // The running CRC32 of the bytes read since the last ResetCrc.
  uint32_t crc() const { return crc_; }
  void ResetCrc() { crc_ = 0; }

  // "<source>: corrupt at byte <at> (<item> <what>): <why>".
  [[noreturn]] void Corrupt(uint64_t at, const char* what, const std::string& why) const;

 private:
  template <typename U>
  U Int(const char* what) {
    unsigned char b[sizeof(U)];
    Bytes(b, sizeof(U), what);
    U v = 0;
    for (size_t i = 0; i < sizeof(U); ++i) v |= static_cast<U>(b[i]) << (8 * i);
    return v;
  }
  std::string Where(const char* what) const;

  ByteSource* src_;
  uint64_t size_;
  std::string source_;
  std::string item_;
  uint64_t pos_ = 0;
  uint32_t crc_ = 0;
};

// prod(dims) * elem_size, or false when a dimension is negative or the
// product exceeds `limit` (checked before it can overflow).
bool CheckedByteCount(const std::vector<int64_t>& dims, uint64_t elem_size, uint64_t limit,
                      uint64_t* bytes);

}  // namespace tessera::serialize
