// RecordIO, MXNet's record file format (dmlc-core's recordio), byte for
// byte. Each record is framed as
//
//   uint32 magic 0xced7230a | uint32 (cflag << 29 | length) | data | 0-3 zero bytes
//
// little-endian, the data padded to 4 bytes. A record whose data holds the
// magic number at a 4-byte aligned offset is written in parts, the magic
// dropped at each cut: cflag 1 starts it, 2 continues, 3 ends it (0: a
// whole record); the reader joins the parts with the magic between them.
//
//   RecordWriter w("data.rec", "MXRecordIO");
//   uint64_t at = w.Tell();   // where the next record starts (for an index)
//   w.Write(bytes);
//   w.Close();                // the file appears only now, whole
//
//   RecordReader r("data.rec", "MXRecordIO");
//   std::string rec;
//   while (r.Next(&rec)) ...  // false at the end
//
// A reader trusts nothing in the file: a wrong magic, a header or data cut
// short, a length past the end of the file, parts out of order are errors
// that name the file and the offset of the record; no length is allocated
// before the file is known to hold it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "engine/base/atomic_file.h"

namespace tessera::io {

inline constexpr uint32_t kRecordMagic = 0xced7230a;
// A part's length field has 29 bits.
inline constexpr uint64_t kMaxRecordPart = (uint64_t{1} << 29) - 1;

class RecordWriter {
 public:
  // `what` starts error messages ("MXRecordIO").
  RecordWriter(const std::string& path, std::string_view what);
  void Write(std::string_view record);
  // The offset of the next record.
  uint64_t Tell() const { return pos_; }
  // Writes what is buffered and makes the file `path`; without it the
  // writer leaves no file.
  void Close();
  bool closed() const { return closed_; }

 private:
  void Append(std::string_view bytes);
  void Flush();
  AtomicFileWriter file_;
  std::string what_, buf_;
  uint64_t pos_ = 0;
  bool closed_ = false;
};

class RecordReader {
 public:
  RecordReader(const std::string& path, std::string_view what);
  ~RecordReader();
  RecordReader(const RecordReader&) = delete;
  RecordReader& operator=(const RecordReader&) = delete;

  // The next record into *out; false (out empty) at the end of the file.
  bool Next(std::string* out);
  // Moves to `pos`, which must be the start of a record (an index's offset).
  void Seek(uint64_t pos);
  uint64_t Tell() const { return pos_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  // Reads exactly n bytes at pos_ (the caller checked they exist).
  void ReadAt(void* dst, size_t n);
  [[noreturn]] void Corrupt(uint64_t record_at, const std::string& why) const;
  std::string path_, what_;
  int fd_ = -1;
  uint64_t size_ = 0, pos_ = 0;
  std::unique_ptr<char[]> buf_;  // a window of the file
  uint64_t buf_at_ = 0;
  size_t buf_len_ = 0;
  size_t window_ = size_t{1} << 20;  // how much one read fills (small after a Seek)
};

// MXNet's image record header (`IRHeader`: struct 'IfQQ', 24 bytes), packed
// in front of a record's payload. A label vector is written after the
// header, as `flag` float32 values, with `label` 0.
struct ImageRecordHeader {
  uint32_t flag = 0;
  float label = 0;
  uint64_t id = 0, id2 = 0;
};
inline constexpr size_t kImageRecordHeaderBytes = 24;

std::string PackImageRecordHeader(const ImageRecordHeader& h);
// The header at the front of `record`; `what` names the caller in errors.
ImageRecordHeader UnpackImageRecordHeader(std::string_view record, std::string_view what);

}  // namespace tessera::io
