// RecordIO: MXNet's framing byte for byte (whole records, padding, records
// cut where their data holds the magic), offsets, atomic writing, and every
// way a file can be cut or corrupted.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "engine/base/error.h"
#include "engine/io/recordio.h"
#include "tests/cpp/temp_dir.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using namespace tessera::io;
using tessera::test::Contains;
using tessera::test::ErrorOf;

namespace {

std::string Le32(uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[size_t(i)] = char((v >> (8 * i)) & 0xff);
  return s;
}

std::string Magic() {
  return Le32(kRecordMagic);
}

std::string Header(uint32_t cflag, uint32_t len) {
  return Magic() + Le32(cflag << 29 | len);
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void WriteRaw(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::vector<std::string> ReadRecords(const std::string& path) {
  RecordReader r(path, "test");
  std::vector<std::string> out;
  std::string rec;
  while (r.Next(&rec)) out.push_back(rec);
  return out;
}

std::string WriteRecords(const std::string& path, const std::vector<std::string>& recs) {
  RecordWriter w(path, "test");
  for (const std::string& r : recs) w.Write(r);
  w.Close();
  return ReadAll(path);
}

}  // namespace

TEST_CASE("whole records: magic, length, data, zero padding to 4 bytes") {
  test::TempDir dir;
  const std::string path = (dir / "a.rec");
  const std::string bytes = WriteRecords(path, {"abc", "", "wxyz", "12345"});
  CHECK(bytes == Header(0, 3) + "abc" + std::string(1, '\0') + Header(0, 0) + Header(0, 4) +
                     "wxyz" + Header(0, 5) + "12345" + std::string(3, '\0'));
  CHECK(ReadRecords(path) == std::vector<std::string>{"abc", "", "wxyz", "12345"});
}

TEST_CASE("a record holding the magic at aligned offsets is written in parts, as dmlc does") {
  test::TempDir dir;
  const std::string path = (dir / "parts.rec");
  // Aligned at 0 and 8 (cut, the magic dropped); at 13 unaligned (kept).
  const std::string rec = Magic() + "abcd" + Magic() + "e" + Magic() + "fg";
  const std::string bytes = WriteRecords(path, {rec});
  CHECK(bytes == Header(1, 0) + Header(2, 4) + "abcd" + Header(3, 7) + "e" + Magic() + "fg" +
                     std::string(1, '\0'));
  CHECK(ReadRecords(path) == std::vector<std::string>{rec});
  // The magic last: an empty last part.
  const std::string tail = "abcd" + Magic();
  CHECK(WriteRecords(path, {tail}) == Header(1, 4) + "abcd" + Header(3, 0));
  CHECK(ReadRecords(path) == std::vector<std::string>{tail});
}

TEST_CASE("random records round-trip; Tell gives each record's offset for Seek") {
  test::TempDir dir;
  const std::string path = (dir / "r.rec");
  std::mt19937 rng(7);
  std::vector<std::string> recs;
  for (int i = 0; i < 300; ++i) {
    std::string r(rng() % 40, '\0');
    for (char& c : r) c = char(rng() % 4 == 0 ? 0x0a : rng());
    if (rng() % 5 == 0) r.insert((rng() % (r.size() / 4 + 1)) * 4, Magic());
    recs.push_back(r);
  }
  recs.push_back(std::string((size_t(3) << 20) + 5, 'x'));  // past the reader's window
  std::vector<uint64_t> at;
  {
    RecordWriter w(path, "test");
    for (const std::string& r : recs) {
      at.push_back(w.Tell());
      w.Write(r);
    }
    w.Close();
  }
  CHECK(ReadRecords(path) == recs);
  RecordReader r(path, "test");
  std::string rec;
  for (size_t i : {size_t(250), size_t(3), recs.size() - 1, size_t(0)}) {
    r.Seek(at[i]);
    REQUIRE(r.Next(&rec));
    CHECK(rec == recs[i]);
  }
  CHECK(Contains(ErrorOf([&] { r.Seek(r.size() + 4); }), "past the end"));
  CHECK(Contains(ErrorOf([&] { r.Seek(2); }), "not the start of a record"));
}

TEST_CASE("an unclosed writer leaves neither the file nor a temporary") {
  test::TempDir dir;
  const std::string path = (dir / "never.rec");
  {
    RecordWriter w(path, "test");
    w.Write("data");
  }
  CHECK(std::filesystem::is_empty(dir.path()));
  CHECK(Contains(ErrorOf([&] {
                   RecordWriter w(path, "test");
                   w.Write(std::string_view(nullptr, 0));
                   w.Close();
                   w.Write("late");
                 }),
                 "is closed"));
}

TEST_CASE("cut and corrupted files are errors naming the file and the offset") {
  test::TempDir dir;
  const std::string path = (dir / "bad.rec");
  const std::string good = Header(0, 3) + "abc" + std::string(1, '\0');
  auto error_of = [&](const std::string& bytes) {
    WriteRaw(path, bytes);
    return ErrorOf([&] { ReadRecords(path); });
  };
  CHECK(Contains(error_of(good + Magic().substr(0, 3)), "at offset 12, a record header cut short"));
  CHECK(Contains(error_of(good + Header(0, 9) + "abc"), "at offset 12, a record of 9 bytes"));
  CHECK(Contains(error_of(good + Le32(0xdeadbeef) + Le32(0)), "magic number is 0xdeadbeef"));
  // A huge length is refused before anything of that size is allocated.
  CHECK(Contains(error_of(Header(0, (1u << 29) - 1)), "a record of 536870911 bytes"));
  CHECK(Contains(error_of(Header(2, 0)), "without its first part"));
  CHECK(Contains(error_of(Header(1, 0) + Header(0, 0)), "before the last part"));
  CHECK(Contains(error_of(Header(1, 0)), "the file ends inside a record written in parts"));
  CHECK(Contains(error_of(good + Header(0, 1)), path + " is not a valid RecordIO file"));
  // Every cut of a valid file reads its whole records, then fails or ends.
  const std::string file = WriteRecords(path, {"first", Magic() + "second", "", "third!"});
  for (size_t cut = 0; cut < file.size(); ++cut) {
    WriteRaw(path, file.substr(0, cut));
    RecordReader r(path, "test");
    std::string rec;
    int n = 0;
    const std::string e = ErrorOf([&] {
      while (r.Next(&rec)) ++n;
    });
    INFO(cut);
    CHECK(n <= 4);
    if (e.empty()) CHECK(cut % 4 == 0);  // only at a record boundary
  }
}

TEST_CASE("a record too long for the 29-bit length is refused") {
  test::TempDir dir;
  RecordWriter w((dir / "big.rec"), "test");
  // Never read: the length is checked first.
  const std::string_view huge(reinterpret_cast<const char*>(&w), size_t{1} << 29);
  CHECK(Contains(ErrorOf([&] { w.Write(huge); }), "below 536870912 bytes"));
}

TEST_CASE("the image record header is MXNet's struct 'IfQQ'") {
  ImageRecordHeader h;
  h.flag = 2;
  h.label = 1.5f;
  h.id = 0x0102030405060708ull;
  h.id2 = 9;
  const std::string s = PackImageRecordHeader(h);
  REQUIRE(s.size() == 24);
  CHECK(s.substr(0, 4) == Le32(2));
  CHECK(s.substr(4, 4) == Le32(0x3fc00000));  // 1.5f
  CHECK(s.substr(8, 4) == Le32(0x05060708));
  CHECK(s.substr(12, 4) == Le32(0x01020304));
  CHECK(s.substr(16, 4) == Le32(9));
  const ImageRecordHeader back = UnpackImageRecordHeader(s + "payload", "test");
  CHECK(back.flag == 2);
  CHECK(back.label == 1.5f);
  CHECK(back.id == h.id);
  CHECK(back.id2 == 9);
  CHECK(Contains(ErrorOf([&] { UnpackImageRecordHeader(s.substr(0, 23), "unpack"); }),
                 "unpack: a record of 23 bytes has no image record header"));
}
