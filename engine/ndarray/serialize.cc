// Save/load entry points: staging arrays on the host, telling the formats
// apart, and writing files atomically (temporary file + rename).
#include "engine/ndarray/serialize.h"

#include "engine/base/atomic_file.h"
#include "engine/base/regular_file.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <set>

#include "engine/ndarray/serialize_formats.h"

namespace tessera {

using serialize::ByteReader;
using serialize::ByteWriter;
using serialize::HostArray;

const char* FormatName(Format fmt) {
  return fmt == Format::kMXNet ? "mxnet" : "tessera";
}

Format FormatFromName(std::string_view name) {
  if (name == "tessera") return Format::kTessera;
  if (name == "mxnet" || name == "params") return Format::kMXNet;
  TS_THROW << "unknown NDArray file format '" << name << "' (expected tessera or mxnet)";
}

namespace serialize {

NDArray ReadPayload(ByteReader& r, const Shape& shape, DType dtype, const char* what) {
  NDArray a(shape, Context::CPU(), dtype);
  // A new array: no op has been pushed on it, so it can be filled directly.
  const TBlob blob = a.data();
  r.Bytes(blob.dptr_, blob.bytes(), what);
  return a;
}

}  // namespace serialize

namespace {

// The arrays' bytes on the host, after every pending write to them.
class HostStaging {
 public:
  explicit HostStaging(const std::vector<NDArray>& arrays) {
    // Start every device-to-host copy before waiting for any of them.
    std::vector<NDArray> host(arrays.size());
    for (size_t i = 0; i < arrays.size(); ++i) {
      const NDArray& a = arrays[i];
      if (a.is_none()) continue;
      host[i] = a.ctx().is_cpu() ? a : a.CopyTo(Context::CPU());
    }
    for (const NDArray& h : host) h.WaitToRead();
    for (size_t i = 0; i < arrays.size(); ++i) {
      HostArray h;
      h.none = arrays[i].is_none();
      if (!h.none) {
        h.dtype = arrays[i].dtype();
        h.shape = arrays[i].shape();
        h.ctx = arrays[i].ctx();
        // A view (Slice, At, Reshape) is contiguous: its own elements only.
        const TBlob blob = host[i].data();
        h.data = blob.dptr_;
        h.bytes = blob.bytes();
      }
      staged_.push_back(h);
    }
    keep_ = std::move(host);
  }
  const std::vector<HostArray>& arrays() const { return staged_; }

 private:
  std::vector<NDArray> keep_;
  std::vector<HostArray> staged_;
};

void CheckNames(const std::vector<NDArray>& arrays, const std::vector<std::string>& names) {
  if (names.empty()) return;
  TS_CHECK(names.size() == arrays.size())
      << "save: " << names.size() << " names for " << arrays.size()
      << " arrays (give one name per array, or none)";
  std::set<std::string_view> seen;
  for (const std::string& n : names)
    TS_CHECK(seen.insert(n).second) << "save: the name '" << n << "' is used twice";
}

void Encode(ByteWriter& w, const std::vector<HostArray>& arrays,
            const std::vector<std::string>& names, Format fmt) {
  if (fmt == Format::kMXNet)
    serialize::WriteMXNet(w, arrays, names);
  else
    serialize::WriteTessera(w, arrays, names);
}

// Tells the formats apart by their first bytes and decodes.
LoadedArrays Decode(serialize::ByteSource* src, uint64_t size, const std::string& source,
                    const unsigned char* head, size_t head_len) {
  ByteReader r(src, size, source);
  if (size == 0) TS_THROW << source << ": the file is empty (not an NDArray file)";
  if (head_len >= 8 && std::memcmp(head, serialize::kTesseraMagic, 8) == 0)
    return serialize::ReadTessera(r);
  uint64_t first = 0;
  for (size_t i = 0; i < 8 && i < head_len; ++i) first |= uint64_t(head[i]) << (8 * i);
  if (head_len >= 8 && first == serialize::kMXNetListMagic) return serialize::ReadMXNet(r);
  if (head_len >= 4 && head[0] == 'P' && head[1] == 'K')
    TS_THROW << source << ": a ZIP/.npz archive (MXNet 2.0 numpy format), which tessera does not "
             << "read; save it with mx.nd.save in MXNet or convert it";
  if (head_len >= 6 && std::memcmp(head, "\x93NUMPY", 6) == 0)
    TS_THROW << source << ": a NumPy .npy file, which tessera does not read";
  if (head_len < 8)
    TS_THROW << source << ": truncated at byte " << head_len
             << " while reading the file header (needs 8 bytes)";
  TS_THROW << source << ": not an NDArray file (neither the tessera magic nor MXNet's 0x112 at "
           << "byte 0)";
}

// Bytes to a file descriptor, buffered.
class FdSink : public serialize::ByteSink {
 public:
  FdSink(int fd, const std::string& path) : fd_(fd), path_(path) { buf_.reserve(kBuf); }
  void Write(const void* data, size_t n) override {
    const char* p = static_cast<const char*>(data);
    if (buf_.size() + n <= kBuf) {
      buf_.insert(buf_.end(), p, p + n);
      return;
    }
    Flush();
    if (n >= kBuf) {
      WriteAll(p, n);
    } else {
      buf_.insert(buf_.end(), p, p + n);
    }
  }
  void Flush() {
    WriteAll(buf_.data(), buf_.size());
    buf_.clear();
  }

 private:
  static constexpr size_t kBuf = size_t{1} << 20;
  void WriteAll(const char* p, size_t n) {
    WriteAllToFd(fd_, std::string_view(p, n), path_, "save");
  }
  int fd_;
  std::string path_;
  std::vector<char> buf_;
};

}  // namespace

std::string SaveNDArraysToString(const std::vector<NDArray>& arrays,
                                 const std::vector<std::string>& names, Format fmt) {
  CheckNames(arrays, names);
  HostStaging staged(arrays);
  std::string out;
  serialize::StringSink sink(&out);
  ByteWriter w(&sink);
  Encode(w, staged.arrays(), names, fmt);
  return out;
}

void SaveNDArrays(const std::string& path, const std::vector<NDArray>& arrays,
                  const std::vector<std::string>& names, Format fmt) {
  CheckNames(arrays, names);
  // Waiting first: a failed op is reported before a file is touched.
  HostStaging staged(arrays);
  WriteFileAtomically(
      path,
      [&](int fd) {
        FdSink sink(fd, path);
        ByteWriter w(&sink);
        Encode(w, staged.arrays(), names, fmt);
        sink.Flush();
      },
      "save");
}

LoadedArrays LoadNDArraysFromString(std::string_view bytes, std::string_view source) {
  serialize::MemorySource src(bytes);
  return Decode(&src, bytes.size(), std::string(source),
                reinterpret_cast<const unsigned char*>(bytes.data()),
                std::min<size_t>(bytes.size(), 8));
}

LoadedArrays LoadNDArrays(const std::string& path) {
  // Never blocks on a FIFO, and refuses directories and devices by name.
  uint64_t size = 0;
  const int fd = OpenRegularFile(path, "load", &size);
  std::FILE* f = ::fdopen(fd, "rb");
  if (!f) {
    const std::string why = ErrnoMessage();
    ::close(fd);
    TS_THROW << "load: cannot read " << path << ": " << why;
  }
  struct FileCloser {
    std::FILE* f;
    ~FileCloser() { std::fclose(f); }
  } closer{f};
  unsigned char head[8] = {};
  const size_t head_len = std::fread(head, 1, std::min<uint64_t>(size, 8), f);
  TS_CHECK(std::fseek(f, 0, SEEK_SET) == 0)
      << "load: cannot read " << path << ": " << ErrnoMessage();
  serialize::FileSource src(f);
  return Decode(&src, size, path, head, head_len);
}

}  // namespace tessera
