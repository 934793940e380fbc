#include "engine/io/recordio.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "engine/base/error.h"
#include "engine/base/regular_file.h"

namespace tessera::io {

static_assert(std::endian::native == std::endian::little,
              "RecordIO files are little-endian; this build writes host order");

namespace {

constexpr uint32_t kCFlagWhole = 0, kCFlagFirst = 1, kCFlagMiddle = 2, kCFlagLast = 3;
constexpr size_t kWriteBuffer = size_t{1} << 20;
constexpr size_t kReadWindow = size_t{1} << 20;
// After a Seek: the header and a small record; larger data is read directly.
constexpr size_t kSeekWindow = size_t{1} << 12;

uint32_t PaddedLength(uint32_t len) {
  return (len + 3u) & ~3u;
}

std::string Hex(uint32_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

}  // namespace

// ---- writing ----------------------------------------------------------------

RecordWriter::RecordWriter(const std::string& path, std::string_view what)
    : file_(path, what), what_(what) {
  buf_.reserve(kWriteBuffer);
}

void RecordWriter::Append(std::string_view bytes) {
  buf_.append(bytes);
  pos_ += bytes.size();
  if (buf_.size() >= kWriteBuffer) Flush();
}

void RecordWriter::Flush() {
  file_.Write(buf_);
  buf_.clear();
}

void RecordWriter::Write(std::string_view record) {
  TS_CHECK(!closed_) << what_ << ": " << file_.path() << " is closed";
  TS_CHECK(record.size() <= kMaxRecordPart)
      << what_ << ": a record of " << record.size() << " bytes; RecordIO records are below "
      << kMaxRecordPart + 1 << " bytes (512 MiB)";
  const uint32_t len = static_cast<uint32_t>(record.size());
  auto header = [&](uint32_t cflag, uint32_t part) {
    const uint32_t h[2] = {kRecordMagic, cflag << 29 | part};
    Append({reinterpret_cast<const char*>(h), sizeof h});
  };
  // The magic at an aligned offset of the data would read as a new record:
  // cut the record there, dropping the magic, which the reader puts back.
  uint32_t done = 0;
  for (uint32_t i = 0; i + 4 <= len; i += 4) {
    uint32_t word;
    std::memcpy(&word, record.data() + i, 4);
    if (word != kRecordMagic) continue;
    header(done == 0 ? kCFlagFirst : kCFlagMiddle, i - done);
    Append(record.substr(done, i - done));
    done = i + 4;
  }
  header(done == 0 ? kCFlagWhole : kCFlagLast, len - done);
  Append(record.substr(done));
  static constexpr char kZeros[4] = {};
  Append({kZeros, PaddedLength(len) - len});
}

void RecordWriter::Close() {
  if (closed_) return;
  closed_ = true;
  Flush();
  file_.Commit();
}

// ---- reading ----------------------------------------------------------------

RecordReader::RecordReader(const std::string& path, std::string_view what)
    : path_(path), what_(what) {
  fd_ = OpenRegularFile(path, what, &size_);
}

RecordReader::~RecordReader() {
  if (fd_ >= 0) ::close(fd_);
}

void RecordReader::Corrupt(uint64_t record_at, const std::string& why) const {
  TS_THROW << what_ << ": " << path_ << " is not a valid RecordIO file: at offset " << record_at
           << ", " << why;
}

void RecordReader::ReadAt(void* dst, size_t n) {
  char* out = static_cast<char*>(dst);
  while (n > 0) {
    if (pos_ >= buf_at_ && pos_ < buf_at_ + buf_len_) {
      const size_t off = static_cast<size_t>(pos_ - buf_at_);
      const size_t k = std::min(n, buf_len_ - off);
      std::memcpy(out, buf_.get() + off, k);
      out += k;
      n -= k;
      pos_ += k;
      continue;
    }
    // Large reads go straight to the destination; small ones fill the window.
    const bool direct = n >= window_;
    if (!buf_ && !direct) buf_ = std::make_unique<char[]>(kReadWindow);
    char* to = direct ? out : buf_.get();
    const size_t want = direct ? n : static_cast<size_t>(std::min<uint64_t>(window_, size_ - pos_));
    const ssize_t k = ::pread(fd_, to, want, static_cast<off_t>(pos_));
    if (k < 0 && errno == EINTR) continue;
    TS_CHECK(k >= 0) << what_ << ": cannot read " << path_ << ": " << std::strerror(errno);
    TS_CHECK(k > 0) << what_ << ": " << path_ << " became shorter while it was read (at offset "
                    << pos_ << ")";
    if (direct) {
      out += k;
      n -= static_cast<size_t>(k);
      pos_ += static_cast<uint64_t>(k);
    } else {
      buf_at_ = pos_;
      buf_len_ = static_cast<size_t>(k);
    }
  }
}

bool RecordReader::Next(std::string* out) {
  out->clear();
  bool in_parts = false;
  for (;;) {
    const uint64_t at = pos_;
    if (at == size_) {
      if (!in_parts) return false;
      Corrupt(at, "the file ends inside a record written in parts (its last part is missing)");
    }
    if (size_ - at < 8)
      Corrupt(at, "a record header cut short (" + std::to_string(size_ - at) + " of 8 bytes)");
    uint32_t h[2];
    ReadAt(h, sizeof h);
    if (h[0] != kRecordMagic)
      Corrupt(at, "the magic number is " + Hex(h[0]) + ", not " + Hex(kRecordMagic));
    const uint32_t cflag = h[1] >> 29, len = h[1] & static_cast<uint32_t>(kMaxRecordPart);
    const uint32_t padded = PaddedLength(len);
    if (padded > size_ - pos_)
      Corrupt(at, "a record of " + std::to_string(len) + " bytes, but the file has " +
                      std::to_string(size_ - pos_) + " left (cut short?)");
    if (!in_parts && (cflag == kCFlagMiddle || cflag == kCFlagLast))
      Corrupt(at, "a continued part of a record without its first part");
    if (in_parts && (cflag == kCFlagWhole || cflag == kCFlagFirst))
      Corrupt(at, "a new record before the last part of the one before");
    const size_t have = out->size();
    out->resize(have + len);
    ReadAt(out->data() + have, len);
    pos_ += padded - len;
    if (cflag == kCFlagWhole || cflag == kCFlagLast) {
      window_ = kReadWindow;  // reading on from here is reading in order
      return true;
    }
    const uint32_t magic = kRecordMagic;
    out->append(reinterpret_cast<const char*>(&magic), 4);
    in_parts = true;
  }
}

void RecordReader::Seek(uint64_t pos) {
  TS_CHECK(pos <= size_) << what_ << ": offset " << pos << " is past the end of " << path_ << " ("
                         << size_ << " bytes)";
  TS_CHECK(pos % 4 == 0) << what_ << ": offset " << pos << " in " << path_
                         << " is not the start of a record (records start at multiples of 4)";
  // A jump: the record there is likely read alone (an index's lookup, a
  // shuffled iterator), so fill only a small window, not a whole one.
  if (pos != pos_) window_ = kSeekWindow;
  pos_ = pos;
}

// ---- the image record header ------------------------------------------------

std::string PackImageRecordHeader(const ImageRecordHeader& h) {
  std::string s(kImageRecordHeaderBytes, '\0');
  std::memcpy(s.data(), &h.flag, 4);
  std::memcpy(s.data() + 4, &h.label, 4);
  std::memcpy(s.data() + 8, &h.id, 8);
  std::memcpy(s.data() + 16, &h.id2, 8);
  return s;
}

ImageRecordHeader UnpackImageRecordHeader(std::string_view record, std::string_view what) {
  TS_CHECK(record.size() >= kImageRecordHeaderBytes)
      << what << ": a record of " << record.size() << " bytes has no image record header ("
      << kImageRecordHeaderBytes << " bytes)";
  ImageRecordHeader h;
  std::memcpy(&h.flag, record.data(), 4);
  std::memcpy(&h.label, record.data() + 4, 4);
  std::memcpy(&h.id, record.data() + 8, 8);
  std::memcpy(&h.id2, record.data() + 16, 8);
  return h;
}

}  // namespace tessera::io
