#include "engine/io/idx_file.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "engine/base/error.h"
#include "engine/base/regular_file.h"
#include "engine/base/shape.h"

namespace tessera::io {

namespace {

constexpr uint8_t kTypeUbyte = 0x08;
// The first piece of data is read into this much memory, and each later one
// into as much again as has been read: the buffer only grows with bytes the
// file has delivered.
constexpr size_t kFirstPiece = size_t{1} << 16;

const char* TypeName(uint8_t code) {
  switch (code) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "int16";
    case 0x0C:
      return "int32";
    case 0x0D:
      return "float32";
    case 0x0E:
      return "float64";
    default:
      return nullptr;
  }
}

uint32_t BigEndian32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}

// Reads exactly n bytes unless the stream ends first; returns how many.
size_t ReadFully(const ReadFn& read, void* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    const size_t r = read(static_cast<char*>(buf) + got, n - got);
    if (r == 0) break;
    got += r;
  }
  return got;
}

}  // namespace

IdxData ReadIdx(const ReadFn& read, int want_ndim, std::string_view source, std::string_view who) {
  uint8_t head[4];
  TS_CHECK(ReadFully(read, head, 4) == 4)
      << who << ": " << source << " is truncated or not an IDX file (no 4-byte magic)";
  TS_CHECK(head[0] == 0 && head[1] == 0 && TypeName(head[2]) && head[3] >= 1)
      << who << ": " << source << " is not an IDX file (magic " << BigEndian32(head)
      << "; an IDX file starts with 0, 0, a type code and the number of dimensions)";
  TS_CHECK(head[2] == kTypeUbyte) << who << ": " << source << " holds " << TypeName(head[2])
                                  << " elements; only unsigned bytes (IDX type 0x08) are read";
  const int ndim = head[3];
  // MNIST's readers name the header's first four bytes its magic number
  // (2051 for images, 2049 for labels).
  TS_CHECK(want_ndim == 0 || ndim == want_ndim)
      << who << ": " << source << " has magic " << BigEndian32(head) << " (" << ndim << " dimension"
      << (ndim == 1 ? "" : "s") << "), expected "
      << (uint32_t{kTypeUbyte} << 8 | uint32_t(want_ndim)) << " (" << want_ndim << " dimension"
      << (want_ndim == 1 ? "" : "s") << ")";
  TS_CHECK(ndim <= Shape::kMaxNdim)
      << who << ": " << source << " has " << ndim << " dimensions, at most " << Shape::kMaxNdim;
  uint8_t dim_bytes[4 * Shape::kMaxNdim];
  TS_CHECK(ReadFully(read, dim_bytes, 4 * size_t(ndim)) == 4 * size_t(ndim))
      << who << ": " << source << " is truncated in its header (" << ndim << " dimensions)";
  IdxData out;
  uint64_t count = 1;
  for (int i = 0; i < ndim; ++i) {
    const uint32_t d = BigEndian32(dim_bytes + 4 * i);
    TS_CHECK(d > 0) << who << ": " << source << ": dimension " << i + 1 << " is 0";
    out.dims.push_back(d);
    count *= d;  // at most (2^32)^2 before the check below: no overflow
    TS_CHECK(count <= (uint64_t{1} << 40))
        << who << ": " << source << ": the header claims more than 2^40 elements";
  }

  // The data, in pieces that grow with what arrives (see kFirstPiece).
  size_t have = 0;
  while (have < count) {
    const size_t want = std::min<uint64_t>(count - have, std::max(kFirstPiece, have));
    out.bytes.resize(have + want);
    const size_t got = ReadFully(read, out.bytes.data() + have, want);
    have += got;
    if (got < want) break;
  }
  if (have != count) {
    std::string dims;
    for (int64_t d : out.dims) dims += (dims.empty() ? "" : "x") + std::to_string(d);
    TS_THROW << who << ": " << source << " is truncated: its header claims " << dims << " = "
             << count << " data bytes, it holds " << have;
  }
  return out;
}

IdxData ReadIdxFile(const std::string& path, int want_ndim, std::string_view who) {
  // Opened once, as a regular file (a FIFO would block gzopen for ever),
  // and handed to zlib, so nothing can swap the file between check and read.
  const int fd = OpenRegularFile(path, who);
  gzFile f = gzdopen(fd, "rb");
  if (!f) ::close(fd);
  TS_CHECK(f) << who << ": cannot open " << path << ": out of memory";
  struct Closer {
    gzFile f;
    ~Closer() { gzclose(f); }
  } closer{f};
  bool failed = false;
  auto read = [&](void* buf, size_t n) -> size_t {
    // gzread takes an unsigned count: read at most 1 GiB at a time.
    const int r = gzread(f, buf, static_cast<unsigned>(std::min<size_t>(n, size_t{1} << 30)));
    if (r < 0) failed = true;
    return r > 0 ? static_cast<size_t>(r) : 0;
  };
  IdxData d;
  try {
    d = ReadIdx(read, want_ndim, path, who);
  } catch (const Error&) {
    int err = Z_OK;
    const char* msg = gzerror(f, &err);
    if (failed && err != Z_OK)
      TS_THROW << who << ": " << path << " is not a valid gzip file (" << msg << ")";
    throw;
  }
  return d;
}

}  // namespace tessera::io
