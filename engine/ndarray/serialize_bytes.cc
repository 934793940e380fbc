#include "engine/ndarray/serialize_bytes.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace tessera::serialize {
namespace {

// Slicing-by-4 tables for the reflected IEEE polynomial: payloads are
// checksummed as they stream through, so this runs at a few GB/s.
struct CrcTables {
  std::array<std::array<uint32_t, 256>, 4> t{};
  CrcTables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
      for (int k = 1; k < 4; ++k) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
  }
};

const CrcTables& Tables() {
  static const CrcTables tables;
  return tables;
}

}  // namespace

uint32_t Crc32(const void* data, size_t n, uint32_t crc) {
  const auto& t = Tables().t;
  const unsigned char* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
  for (; n >= 4; n -= 4, p += 4) {
    c ^= uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
    c = t[3][c & 0xff] ^ t[2][(c >> 8) & 0xff] ^ t[1][(c >> 16) & 0xff] ^ t[0][c >> 24];
  }
  for (; n; --n, ++p) c = t[0][(c ^ *p) & 0xff] ^ (c >> 8);
  return ~c;
}

void ByteWriter::Bytes(const void* data, size_t n) {
  if (n == 0) return;
  crc_ = Crc32(data, n, crc_);
  sink_->Write(data, n);
}

void ByteWriter::String(std::string_view s) {
  U64(s.size());
  Bytes(s.data(), s.size());
}

size_t MemorySource::Read(void* data, size_t n) {
  const size_t k = std::min(n, bytes_.size() - pos_);
  std::memcpy(data, bytes_.data() + pos_, k);
  pos_ += k;
  return k;
}

std::string ByteReader::Where(const char* what) const {
  std::string w = item_;
  if (what && *what) w += (w.empty() ? "" : " ") + std::string(what);
  return w;
}

void ByteReader::Need(uint64_t n, const char* what) const {
  if (n <= remaining()) return;
  TS_THROW << source_ << ": truncated at byte " << pos_ << " while reading " << Where(what)
           << " (needs " << n << " bytes, " << remaining() << " left)";
}

void ByteReader::Bytes(void* data, uint64_t n, const char* what) {
  Need(n, what);
  // Large payloads stream in pieces so the CRC runs while the data is in cache.
  constexpr uint64_t kPiece = uint64_t{1} << 22;
  char* dst = static_cast<char*>(data);
  for (uint64_t done = 0; done < n;) {
    const size_t piece = static_cast<size_t>(std::min(kPiece, n - done));
    const size_t got = src_->Read(dst + done, piece);
    crc_ = Crc32(dst + done, got, crc_);
    done += got;
    pos_ += got;
    if (got != piece)
      TS_THROW << source_ << ": read error at byte " << pos_ << " while reading " << Where(what)
               << " (the file is shorter than when it was opened, or unreadable)";
  }
}

std::string ByteReader::String(const char* what) {
  const uint64_t at = pos_;
  const uint64_t len = U64(what);
  if (len > remaining())
    Corrupt(at, what,
            "length " + std::to_string(len) + " exceeds the " + std::to_string(remaining()) +
                " bytes left in the file");
  std::string s(static_cast<size_t>(len), '\0');
  Bytes(s.data(), len, what);
  return s;
}

void ByteReader::ExpectEnd() const {
  if (remaining() == 0) return;
  TS_THROW << source_ << ": corrupt: " << remaining() << " unexpected bytes after the end at byte "
           << pos_;
}

void ByteReader::Corrupt(uint64_t at, const char* what, const std::string& why) const {
  TS_THROW << source_ << ": corrupt at byte " << at << " (" << Where(what) << "): " << why;
}

bool CheckedByteCount(const std::vector<int64_t>& dims, uint64_t elem_size, uint64_t limit,
                      uint64_t* bytes) {
  uint64_t n = elem_size;
  if (n > limit) return false;
  for (int64_t d : dims) {
    if (d < 0) return false;
    if (d == 0) {
      n = 0;
      continue;
    }
    // n * d <= limit, without overflow.
    if (n != 0 && static_cast<uint64_t>(d) > limit / n) return false;
    n *= static_cast<uint64_t>(d);
  }
  *bytes = n;
  return true;
}

}  // namespace tessera::serialize
