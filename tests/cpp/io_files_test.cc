// The file readers behind MNISTIter and CSVIter (engine/io/idx_file.h,
// csv_file.h): what they accept, the errors they raise, and that a header
// claiming more than the file holds costs no more memory than the file.
// tests/fuzz has their libFuzzer harnesses.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "engine/io/csv_file.h"
#include "engine/io/idx_file.h"
#include "tests/cpp/temp_dir.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using test::Contains;
using test::ErrorOf;

namespace {

std::string Idx(std::vector<uint32_t> dims, const std::string& data, uint8_t type = 8) {
  std::string s = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) s += static_cast<char>((d >> shift) & 0xff);
  return s + data;
}

// A reader over `bytes` that also records the largest read asked for.
struct MemoryReader {
  std::string bytes;
  size_t pos = 0, largest = 0;
  size_t operator()(void* buf, size_t n) {
    largest = std::max(largest, n);
    n = std::min(n, bytes.size() - pos);
    std::memcpy(buf, bytes.data() + pos, n);
    pos += n;
    return n;
  }
};

io::IdxData Parse(const std::string& bytes, int want_ndim = 0) {
  MemoryReader r{bytes};
  return io::ReadIdx(std::ref(r), want_ndim, "f.idx", "MNISTIter");
}

}  // namespace

TEST_CASE("IDX: dims and bytes of a valid file") {
  const io::IdxData d = Parse(Idx({2, 1, 3}, "abcdef"), 3);
  CHECK(d.dims == std::vector<int64_t>{2, 1, 3});
  CHECK(std::string(d.bytes.begin(), d.bytes.end()) == "abcdef");
  CHECK(Parse(Idx({3}, "xyz")).dims == std::vector<int64_t>{3});
}

TEST_CASE("IDX: damaged headers are errors naming the file") {
  CHECK(ErrorOf([] { Parse(""); }) ==
        "MNISTIter: f.idx is truncated or not an IDX file (no 4-byte magic)");
  CHECK(Contains(ErrorOf([] { Parse("\x01\x02\x08\x01"); }), "is not an IDX file (magic "));
  CHECK(Contains(ErrorOf([] { Parse(Idx({2}, "ab", 0x0D)); }),
                 "holds float32 elements; only unsigned bytes"));
  CHECK(ErrorOf([] { Parse(Idx({3}, "abc"), 3); }) ==
        "MNISTIter: f.idx has magic 2049 (1 dimension), expected 2051 (3 dimensions)");
  CHECK(Contains(ErrorOf([] { Parse(Idx({2, 0}, "")); }), "dimension 2 is 0"));
  CHECK(Contains(ErrorOf([] { Parse(Idx(std::vector<uint32_t>(11, 1), "a")); }),
                 "11 dimensions, at most 10"));
  CHECK(Contains(ErrorOf([] { Parse(Idx({2, 3}, "").substr(0, 9)); }), "truncated in its header"));
  CHECK(Contains(ErrorOf([] { Parse(Idx({65536, 65536, 65536}, "")); }), "more than 2^40"));
}

TEST_CASE("IDX: a header claiming more than the file holds reads only what is there") {
  // 2000 x 1000 x 1000 = 2 GB claimed, 100 bytes present.
  MemoryReader r{Idx({2000, 1000, 1000}, std::string(100, 'x'))};
  CHECK(
      ErrorOf([&] { io::ReadIdx(std::ref(r), 3, "big.idx", "MNISTIter"); }) ==
      "MNISTIter: big.idx is truncated: its header claims 2000x1000x1000 = 2000000000 data bytes, "
      "it holds 100");
  // The buffer grew only as far as the first piece.
  CHECK(r.largest <= (size_t{1} << 16));
}

TEST_CASE("IDX files: gzip'd and plain, and only regular files") {
  const test::TempDir dir("tessera_idx");
  const std::string path = dir / "images.idx";
  const std::string bytes = Idx({2, 2}, "wxyz");
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f);
    REQUIRE(std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size());
    std::fclose(f);
  }
  CHECK(io::ReadIdxFile(path, 2, "MNISTIter").dims == std::vector<int64_t>{2, 2});
  std::remove(path.c_str());
  CHECK(Contains(ErrorOf([&] { io::ReadIdxFile(path, 2, "MNISTIter"); }), "cannot open"));
  // A FIFO would block a reader until a writer came: refused before opening.
  REQUIRE(mkfifo(path.c_str(), 0600) == 0);
  CHECK(ErrorOf([&] { io::ReadIdxFile(path, 2, "MNISTIter"); }) ==
        "MNISTIter: " + path + " is not a regular file (it is a FIFO)");
}

TEST_CASE("CSV: rows, blanks, empty fields and number spellings") {
  const io::CsvRows r =
      io::ParseCsv("1,2,3\n\n  \n4, 5 ,+6\r\n7,,8\n1e3,-0.5,inf\n", "f.csv", "CSVIter");
  CHECK(r.row_sizes == std::vector<size_t>{3, 3, 2, 3});
  CHECK(r.values == std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 1000, -0.5, INFINITY});
  CHECK(io::ParseCsv("", "f.csv", "CSVIter").row_sizes.empty());
  CHECK(io::ParseCsv("1e999,-1e999\n", "f.csv", "CSVIter").values ==
        std::vector<double>{INFINITY, -INFINITY});
}

TEST_CASE("CSV: what is not a number is an error naming the line and the field") {
  CHECK(ErrorOf([] { io::ParseCsv("1,2\n3,x\n", "f.csv", "CSVIter"); }) ==
        "CSVIter: f.csv:2: \"x\" is not a number");
  CHECK(ErrorOf([] { io::ParseCsv("1.5.5", "f.csv", "CSVIter"); }) ==
        "CSVIter: f.csv:1: \"1.5.5\" is not a number");
  CHECK(Contains(ErrorOf([] { io::ParseCsv("+", "f.csv", "CSVIter"); }), "is not a number"));
  CHECK(Contains(ErrorOf([] { io::ParseCsv(std::string("1\0", 2), "f.csv", "CSVIter"); }),
                 "\"1?\" is not a number"));
}
