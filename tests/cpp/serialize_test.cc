// NDArray save/load: round trips of both formats with every dtype, views and
// empty slots; MXNet records built byte by byte (V3, V2, V1, legacy, sparse);
// the committed fixtures in tests/data/ndarray; atomic writes; clear errors
// for damaged files, and a fuzz pass over truncations and flipped bytes.
//
// TESSERA_MXNET_MODELS=<folder of real MXNet checkpoints> adds a check that
// every .params file there loads (skipped when unset).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include "engine/ndarray/serialize.h"
#include "engine/ndarray/serialize_bytes.h"
#include "tests/cpp/op_test_util.h"
#include "tests/cpp/temp_dir.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using tessera::test::Contains;
using tessera::test::ErrorOf;
using tessera::test::TempDir;
namespace fs = std::filesystem;

namespace {

const DType kAllDTypes[] = {DType::kFloat32,  DType::kFloat64, DType::kFloat16,
                            DType::kBFloat16, DType::kUint8,   DType::kInt8,
                            DType::kInt32,    DType::kInt64,   DType::kBool};

// The raw bytes of an array (after waiting for it).
std::string RawBytes(const NDArray& a) {
  std::string s(static_cast<size_t>(a.Size()) * DTypeSize(a.dtype()), '\0');
  a.SyncCopyToCPU(s.data(), static_cast<size_t>(a.Size()));
  return s;
}

// An array of random bit patterns (0/1 for bool): every bit must survive.
NDArray RandomBits(const Shape& shape, DType dtype, uint32_t seed) {
  NDArray a(shape, Context::CPU(), dtype);
  std::string bytes(static_cast<size_t>(shape.Size()) * DTypeSize(dtype), '\0');
  std::mt19937 gen(seed);
  for (char& c : bytes) c = static_cast<char>(dtype == DType::kBool ? gen() & 1 : gen());
  a.SyncCopyFromCPU(bytes.data(), static_cast<size_t>(shape.Size()));
  return a;
}

void CheckSame(const NDArray& got, const NDArray& want) {
  REQUIRE(!got.is_none());
  CHECK(got.shape() == want.shape());
  CHECK(got.dtype() == want.dtype());
  CHECK(got.ctx() == Context::CPU());
  CHECK(RawBytes(got) == RawBytes(want));
}

// Little-endian byte builder for hand-made files.
struct Bytes {
  std::string s;
  template <typename T>
  Bytes& Put(T v) {
    s.append(reinterpret_cast<const char*>(&v), sizeof(v));
    return *this;
  }
  Bytes& u32(uint32_t v) { return Put(v); }
  Bytes& i32(int32_t v) { return Put(v); }
  Bytes& u64(uint64_t v) { return Put(v); }
  Bytes& i64(int64_t v) { return Put(v); }
  Bytes& f32(float v) { return Put(v); }
  Bytes& str(const std::string& v) {
    u64(v.size());
    s += v;
    return *this;
  }
  Bytes& raw(const std::string& v) {
    s += v;
    return *this;
  }
};

constexpr uint32_t kV1 = 0xF993FAC8u, kV2 = 0xF993FAC9u, kV3 = 0xF993FACAu;

Bytes MXNetHeader(uint64_t n) {
  Bytes b;
  b.u64(0x112).u64(0).u64(n);
  return b;
}

std::string FixtureDir() {
  return (fs::path(__FILE__).parent_path().parent_path() / "data" / "ndarray").string();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("CRC32 is zlib's") {
  CHECK(serialize::Crc32("123456789", 9) == 0xCBF43926u);
  // Continuing a running checksum gives the same value as one pass.
  const uint32_t part = serialize::Crc32("12345", 5);
  CHECK(serialize::Crc32("6789", 4, part) == 0xCBF43926u);
  CHECK(serialize::Crc32("", 0) == 0u);
}

TEST_CASE("both formats round-trip every dtype, named and unnamed") {
  std::vector<NDArray> arrays;
  std::vector<std::string> names;
  uint32_t seed = 1;
  for (DType t : kAllDTypes) {
    arrays.push_back(RandomBits({2, 3, 5}, t, seed++));
    names.push_back(std::string("arg:") + DTypeName(t));
  }
  arrays.push_back(RandomBits({1}, DType::kFloat32, seed++));  // a scalar-like (1)
  names.push_back("");                                         // empty names are names too
  for (Format fmt : {Format::kTessera, Format::kMXNet}) {
    CAPTURE(FormatName(fmt));
    for (bool named : {false, true}) {
      const std::vector<std::string> given = named ? names : std::vector<std::string>{};
      LoadedArrays got = LoadNDArraysFromString(SaveNDArraysToString(arrays, given, fmt));
      CHECK(got.format == fmt);
      CHECK(got.names == given);
      REQUIRE(got.arrays.size() == arrays.size());
      REQUIRE(got.saved_contexts.size() == arrays.size());
      for (size_t i = 0; i < arrays.size(); ++i) {
        CheckSame(got.arrays[i], arrays[i]);
        CHECK(got.saved_contexts[i] == Context::CPU());
      }
    }
  }
}

TEST_CASE("views save only their own elements") {
  NDArray base = test::Array({4, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  NDArray rows = base.Slice(1, 3);
  NDArray row = base.At(3);
  NDArray flat = base.Slice(2, 4).Reshape(Shape{6});
  for (Format fmt : {Format::kTessera, Format::kMXNet}) {
    LoadedArrays got = LoadNDArraysFromString(SaveNDArraysToString({rows, row, flat}, {}, fmt));
    REQUIRE(got.arrays.size() == 3);
    CHECK(got.arrays[0].shape() == Shape{2, 3});
    test::CheckClose(got.arrays[0], {3, 4, 5, 6, 7, 8}, 0, 0);
    CHECK(got.arrays[1].shape() == Shape{3});
    test::CheckClose(got.arrays[1], {9, 10, 11}, 0, 0);
    CHECK(got.arrays[2].shape() == Shape{6});
    test::CheckClose(got.arrays[2], {6, 7, 8, 9, 10, 11}, 0, 0);
    // Loaded arrays own their memory.
    CHECK(!got.arrays[0].SameChunk(base));
  }
}

TEST_CASE("saving waits for pending writes to the arrays") {
  NDArray x = test::Array({3}, {1, 2, 3});
  NDArray y = Invoke("quadratic", {x}, {{"a", "1"}, {"c", "1"}})[0];  // pushed, not waited for
  LoadedArrays got = LoadNDArraysFromString(SaveNDArraysToString({y}));
  test::CheckClose(got.arrays[0], {2, 5, 10}, 0, 0);
}

TEST_CASE("empty lists and empty slots round-trip") {
  for (Format fmt : {Format::kTessera, Format::kMXNet}) {
    LoadedArrays empty = LoadNDArraysFromString(SaveNDArraysToString({}, {}, fmt));
    CHECK(empty.arrays.empty());
    CHECK(empty.names.empty());
    CHECK(empty.format == fmt);
    NDArray a = test::Array({2}, {7, 8});
    LoadedArrays got =
        LoadNDArraysFromString(SaveNDArraysToString({NDArray(), a}, {"none", "a"}, fmt));
    REQUIRE(got.arrays.size() == 2);
    CHECK(got.arrays[0].is_none());
    CheckSame(got.arrays[1], a);
    CHECK(got.names == std::vector<std::string>{"none", "a"});
  }
}

TEST_CASE("the tessera format's bytes are as documented") {
  NDArray a(Shape{2}, Context::CPU(), DType::kInt32);
  const int32_t v[2] = {5, -1};
  a.SyncCopyFromCPU(v, 2);
  const std::string s = SaveNDArraysToString({a}, {"w"});
  Bytes header;
  header.raw(std::string("\x89TSND\r\n\x1a", 8)).u32(1).u32(1).u64(1);
  header.u32(serialize::Crc32(header.s.data(), header.s.size()));
  Bytes record;
  record.str("w").i32(4).i32(1).i64(2).i32(1).i32(0).u64(8).i32(5).i32(-1);
  record.u32(serialize::Crc32(record.s.data(), record.s.size()));
  CHECK(s == header.s + record.s);
}

TEST_CASE("the MXNet writer produces V2 records MXNet reads") {
  NDArray a(Shape{2, 1}, Context::CPU(), DType::kFloat32);
  const float v[2] = {1.5f, -2.f};
  a.SyncCopyFromCPU(v, 2);
  const std::string s = SaveNDArraysToString({a, NDArray()}, {"arg:w", "x"}, Format::kMXNet);
  Bytes want = MXNetHeader(2);
  want.u32(kV2).i32(0).i32(2).i64(2).i64(1).i32(1).i32(0).i32(0).f32(1.5f).f32(-2.f);
  want.u32(kV2).i32(0).i32(0);  // an empty slot: ndim 0 ends the record
  want.u64(2).str("arg:w").str("x");
  CHECK(s == want.s);
}

TEST_CASE("MXNet V2 records built byte by byte load") {
  Bytes b = MXNetHeader(3);
  // float32 (2,2) saved from gpu(1): loads on cpu(0), context remembered.
  b.u32(kV2).i32(0).i32(2).i64(2).i64(2).i32(2).i32(1).i32(0);
  for (float f : {1.f, 2.f, 3.f, 4.f}) b.f32(f);
  // int64 (3,)
  b.u32(kV2).i32(0).i32(1).i64(3).i32(1).i32(0).i32(6).i64(-7).i64(0).i64(int64_t{1} << 40);
  // an empty slot
  b.u32(kV2).i32(0).i32(0);
  b.u64(3).str("arg:fc_weight").str("aux:bn_moving_mean").str("arg:unused");
  LoadedArrays got = LoadNDArraysFromString(b.s);
  CHECK(got.format == Format::kMXNet);
  CHECK(got.variant == "mxnet V2 records");
  REQUIRE(got.arrays.size() == 3);
  CHECK(got.names == std::vector<std::string>{"arg:fc_weight", "aux:bn_moving_mean", "arg:unused"});
  CHECK(got.arrays[0].shape() == Shape{2, 2});
  CHECK(got.arrays[0].ctx() == Context::CPU());
  CHECK(got.saved_contexts[0] == Context::GPU(1));
  test::CheckClose(got.arrays[0], {1, 2, 3, 4}, 0, 0);
  CHECK(got.arrays[1].dtype() == DType::kInt64);
  int64_t ints[3];
  got.arrays[1].SyncCopyToCPU(ints, 3);
  CHECK(ints[0] == -7);
  CHECK(ints[2] == int64_t{1} << 40);
  CHECK(got.arrays[2].is_none());
}

TEST_CASE("MXNet legacy, V1 and V3 records load") {
  SUBCASE("legacy: no magic, uint32 dims, unnamed") {
    Bytes b = MXNetHeader(2);
    b.u32(2).u32(1).u32(3).i32(1).i32(0).i32(0).f32(0.5f).f32(1.5f).f32(2.5f);
    b.u32(0);  // ndim 0: an empty slot
    b.u64(0);
    LoadedArrays got = LoadNDArraysFromString(b.s);
    CHECK(got.variant == "mxnet legacy records (before 0.11)");
    CHECK(got.names.empty());
    CHECK(got.arrays[0].shape() == Shape{1, 3});
    test::CheckClose(got.arrays[0], {0.5, 1.5, 2.5}, 0, 0);
    CHECK(got.arrays[1].is_none());
  }
  SUBCASE("V1: uint32 ndim, int64 dims, no storage type") {
    Bytes b = MXNetHeader(1);
    b.u32(kV1).u32(1).i64(2).i32(1).i32(0).i32(1).Put(0.25).Put(-8.0);
    b.u64(1).str("x");
    LoadedArrays got = LoadNDArraysFromString(b.s);
    CHECK(got.variant == "mxnet V1 records");
    CHECK(got.arrays[0].dtype() == DType::kFloat64);
    test::CheckClose(got.arrays[0], {0.25, -8}, 0, 0);
  }
  SUBCASE("V3: ndim 0 is a scalar, ndim -1 an empty slot") {
    Bytes b = MXNetHeader(3);
    b.u32(kV3).i32(0).i32(0).i32(1).i32(0).i32(0).f32(42.f);
    b.u32(kV3).i32(0).i32(-1);
    b.u32(kV3).i32(0).i32(2).i64(2).i64(-1);  // unknown dimension: empty
    b.u64(0);
    LoadedArrays got = LoadNDArraysFromString(b.s);
    CHECK(got.variant == "mxnet V3 records");
    CHECK(got.arrays[0].shape() == Shape{1});
    test::CheckClose(got.arrays[0], {42}, 0, 0);
    CHECK(got.arrays[1].is_none());
    CHECK(got.arrays[2].is_none());
  }
}

TEST_CASE("MXNet sparse records load as dense arrays") {
  SUBCASE("row_sparse") {
    // shape (4,2), rows 1 and 3 stored.
    Bytes b = MXNetHeader(1);
    b.u32(kV2).i32(1).i32(2).i64(2).i64(2).i32(2).i64(4).i64(2).i32(1).i32(0).i32(0);
    b.i32(6).i32(1).i64(2);  // aux: int64 indices, shape (2,)
    for (float f : {1.f, 2.f, 3.f, 4.f}) b.f32(f);
    b.i64(1).i64(3);
    b.u64(0);
    LoadedArrays got = LoadNDArraysFromString(b.s);
    CHECK(got.arrays[0].shape() == Shape{4, 2});
    test::CheckClose(got.arrays[0], {0, 0, 1, 2, 0, 0, 3, 4}, 0, 0);
  }
  SUBCASE("csr") {
    // [[0, 5, 0], [0, 0, 0], [6, 0, 7]]
    Bytes b = MXNetHeader(1);
    b.u32(kV2).i32(2).i32(1).i64(3).i32(2).i64(3).i64(3).i32(1).i32(0).i32(0);
    b.i32(6).i32(1).i64(4);  // indptr (4,)
    b.i32(4).i32(1).i64(3);  // indices int32 (3,)
    for (float f : {5.f, 6.f, 7.f}) b.f32(f);
    b.i64(0).i64(1).i64(1).i64(3);
    b.i32(1).i32(0).i32(2);
    b.u64(0);
    LoadedArrays got = LoadNDArraysFromString(b.s);
    test::CheckClose(got.arrays[0], {0, 5, 0, 0, 0, 0, 6, 0, 7}, 0, 0);
  }
  SUBCASE("an out-of-range row index is an error") {
    Bytes b = MXNetHeader(1);
    b.u32(kV2).i32(1).i32(2).i64(1).i64(2).i32(2).i64(4).i64(2).i32(1).i32(0).i32(0);
    b.i32(6).i32(1).i64(1).f32(1).f32(2).i64(4).u64(0);
    CHECK(Contains(ErrorOf([&] { LoadNDArraysFromString(b.s, "x.params"); }),
                   "row_sparse row index 4 is out of range for shape (4,2)"));
  }
}

TEST_CASE("MXNet's extra integer dtypes widen") {
  Bytes b = MXNetHeader(3);
  b.u32(kV2).i32(0).i32(1).i64(2).i32(1).i32(0).i32(8).Put(int16_t(-3)).Put(int16_t(300));
  b.u32(kV2).i32(0).i32(1).i64(1).i32(1).i32(0).i32(10).u32(4000000000u);
  b.u32(kV2).i32(0).i32(1).i64(1).i32(1).i32(0).i32(11).u64(5);
  b.u64(0);
  LoadedArrays got = LoadNDArraysFromString(b.s);
  CHECK(got.arrays[0].dtype() == DType::kInt32);
  test::CheckClose(got.arrays[0], {-3, 300}, 0, 0);
  CHECK(got.arrays[1].dtype() == DType::kInt64);
  test::CheckClose(got.arrays[1], {4000000000.0}, 0, 0);
  test::CheckClose(got.arrays[2], {5}, 0, 0);
  Bytes big = MXNetHeader(1);
  big.u32(kV2).i32(0).i32(1).i64(1).i32(1).i32(0).i32(11).u64(~uint64_t{0}).u64(0);
  CHECK(Contains(ErrorOf([&] { LoadNDArraysFromString(big.s); }), "does not fit in int64"));
}

TEST_CASE("a tessera file saved from a GPU loads on the CPU") {
  Bytes header;
  header.raw(std::string("\x89TSND\r\n\x1a", 8)).u32(1).u32(0).u64(1);
  header.u32(serialize::Crc32(header.s.data(), header.s.size()));
  Bytes record;
  record.i32(0).i32(1).i64(2).i32(2).i32(3).u64(8).f32(1).f32(2);
  record.u32(serialize::Crc32(record.s.data(), record.s.size()));
  LoadedArrays got = LoadNDArraysFromString(header.s + record.s);
  CHECK(got.arrays[0].ctx() == Context::CPU());
  CHECK(got.saved_contexts[0] == Context::GPU(3));
  test::CheckClose(got.arrays[0], {1, 2}, 0, 0);
}

TEST_CASE("committed fixtures load (format stability)") {
  // Written by tests/data/ndarray/make_fixtures.py, an independent writer.
  LoadedArrays t = LoadNDArrays(FixtureDir() + "/tessera_v1.nd");
  CHECK(t.variant == "tessera v1");
  REQUIRE(t.arrays.size() == 4);
  CHECK(t.names == std::vector<std::string>{"weight", "bias", "steps", "mask"});
  CHECK(t.arrays[0].shape() == Shape{2, 3});
  test::CheckClose(t.arrays[0], {0, 0.5, 1, 1.5, 2, 2.5}, 0, 0);
  CHECK(t.arrays[1].dtype() == DType::kFloat16);
  test::CheckClose(t.arrays[1], {-1, 0.25}, 0, 0);
  CHECK(t.arrays[2].dtype() == DType::kInt64);
  test::CheckClose(t.arrays[2], {1, 2, 3}, 0, 0);
  CHECK(t.arrays[3].dtype() == DType::kBool);
  test::CheckClose(t.arrays[3], {1, 0, 1, 1}, 0, 0);

  LoadedArrays m = LoadNDArrays(FixtureDir() + "/mxnet_v2.params");
  CHECK(m.variant == "mxnet V2 records");
  CHECK(m.names == std::vector<std::string>{"arg:fc1_weight", "arg:fc1_bias"});
  CHECK(m.arrays[0].shape() == Shape{3, 2});
  test::CheckClose(m.arrays[0], {1, 2, 3, 4, 5, 6}, 0, 0);
  test::CheckClose(m.arrays[1], {0.5, -0.5, 0}, 0, 0);

  LoadedArrays l = LoadNDArrays(FixtureDir() + "/mxnet_legacy.params");
  CHECK(l.variant == "mxnet legacy records (before 0.11)");
  REQUIRE(l.arrays.size() == 2);
  test::CheckClose(l.arrays[0], {0, 1, 2, 3, 4, 5, 6, 7}, 0, 0);
  CHECK(l.arrays[1].shape() == Shape{2, 2});
}

TEST_CASE("files are written atomically") {
  TempDir dir("tessera_serialize_test");
  const std::string path = dir / "model.params";
  NDArray a = test::Array({3}, {1, 2, 3});
  for (Format fmt : {Format::kTessera, Format::kMXNet}) {
    SaveNDArrays(path, {a}, {"a"}, fmt);
    LoadedArrays got = LoadNDArrays(path);
    CHECK(got.format == fmt);
    CheckSame(got.arrays[0], a);
  }
  CHECK(dir.Files() == std::vector<std::string>{"model.params"});
  // Replacing keeps one file with the new contents.
  SaveNDArrays(path, {a, a}, {"a", "b"});
  CHECK(LoadNDArrays(path).arrays.size() == 2);
  CHECK(dir.Files().size() == 1);
  // Failed saves leave the old file as it was and nothing else.
  const std::string before = ReadFile(path);
  CHECK(Contains(ErrorOf([&] {
                   SaveNDArrays(path, {a}, {"x", "y"});
                 }),
                 "save: 2 names for 1 arrays"));
  CHECK(Contains(ErrorOf([&] {
                   SaveNDArrays(path, {a, a}, {"x", "x"});
                 }),
                 "save: the name 'x' is used twice"));
  CHECK(Contains(ErrorOf([&] { SaveNDArrays(dir / "no/such/dir/f.nd", {a}); }),
                 "save: cannot create " + dir / "no/such/dir/f.nd"));
  CHECK(ReadFile(path) == before);
  CHECK(dir.Files() == std::vector<std::string>{"model.params"});
}

TEST_CASE("damaged files raise errors naming the file, byte and field") {
  NDArray a = test::Array({2, 3}, {1, 2, 3, 4, 5, 6});
  const std::string t = SaveNDArraysToString({a, a}, {"a", "b"});
  const std::string m = SaveNDArraysToString({a, a}, {"a", "b"}, Format::kMXNet);
  auto load = [](const std::string& bytes) {
    return ErrorOf([&] { LoadNDArraysFromString(bytes, "f.nd"); });
  };
  SUBCASE("truncation") {
    // tessera: header 28 bytes, then record 0: name (8+1), dtype, ndim, dims...
    CHECK(load(t.substr(0, 28 + 9 + 8 + 4)) ==
          "f.nd: corrupt at byte 16 (the file header array count): 2 arrays cannot fit in the 21 "
          "bytes left (truncated file?)");
    // One array: its record starts at 28: name (8 + 1), dtype, ndim, 2 dims, context, count.
    const std::string one = SaveNDArraysToString({a}, {"a"});
    CHECK(load(one.substr(0, 28 + 9 + 8 + 16 + 8 + 8 + 5)) ==
          "f.nd: truncated at byte 77 while reading array 0 data (needs 24 bytes, 5 left)");
    CHECK(Contains(load(t.substr(0, t.size() - 1)), "while reading array 1 checksum"));
    // mxnet: header 24, record 0 = magic, stype, ndim, dims (2 x 8) ...
    CHECK(load(m.substr(0, 24 + 12 + 5)) ==
          "f.nd: truncated at byte 36 while reading array 0 shape (needs 8 bytes, 5 left)");
    CHECK(Contains(load(m.substr(0, m.size() - 2)), "while reading name 1"));
    CHECK(load(t.substr(0, 5)) ==
          "f.nd: truncated at byte 5 while reading the file header (needs 8 bytes)");
    CHECK(load("") == "f.nd: the file is empty (not an NDArray file)");
  }
  SUBCASE("bad counts, shapes and flags") {
    Bytes huge = MXNetHeader(uint64_t{1} << 60);
    CHECK(Contains(load(huge.u64(0).s), "array count): 1152921504606846976 arrays cannot fit"));
    Bytes ndim = MXNetHeader(1);
    CHECK(Contains(load(ndim.u32(kV2).i32(0).i32(11).s),
                   "corrupt at byte 32 (array 0 shape): ndim 11 (at most 10)"));
    Bytes overflow = MXNetHeader(1);
    overflow.u32(kV2).i32(0).i32(2).i64(int64_t{1} << 62).i64(int64_t{1} << 62);
    overflow.i32(1).i32(0).i32(0).u64(0);
    CHECK(
        Contains(load(overflow.s), "shape (4611686018427387904,4611686018427387904) is too large"));
    Bytes dtype = MXNetHeader(1);
    dtype.u32(kV2).i32(0).i32(1).i64(1).i32(1).i32(0).i32(99).f32(0).u64(0);
    CHECK(Contains(load(dtype.s), "(array 0 dtype): unknown dtype flag 99"));
    Bytes stype = MXNetHeader(1);
    CHECK(Contains(load(stype.u32(kV2).i32(7).s), "unknown storage type 7"));
    Bytes magic = MXNetHeader(1);
    CHECK(Contains(load(magic.u32(0xF993FACBu).s),
                   "0xf993facb is neither a record magic (V1, V2, V3) nor a legacy ndim"));
    Bytes zero = MXNetHeader(1);
    zero.u32(kV2).i32(0).i32(2).i64(3).i64(0).i32(1).i32(0).i32(0).u64(0);
    CHECK(Contains(load(zero.s), "shape (3,0) has a zero-size dimension"));
    Bytes names = MXNetHeader(0);
    CHECK(Contains(load(names.u64(2).s), "2 names for 0 arrays"));
    Bytes name_len = MXNetHeader(0);
    CHECK(Contains(load(name_len.u64(0).s + "x"), "1 unexpected bytes after the end at byte 32"));
    CHECK(Contains(load(m + "zz"), "2 unexpected bytes after the end"));
  }
  SUBCASE("tessera checksums, versions and flags") {
    std::string bad = t;
    bad[bad.size() - 10] ^= 0x40;  // a data byte of array 1
    CHECK(Contains(load(bad), "(array 1 checksum): CRC32 mismatch"));
    std::string version = t;
    version[8] = 2;
    CHECK(Contains(load(version), "format version 2; this build reads versions 1 to 1"));
    std::string flags = t;
    flags[12] = 6;
    CHECK(Contains(load(flags), "unknown flag bits 6"));
  }
  SUBCASE("other kinds of files") {
    CHECK(Contains(load(std::string("PK\x03\x04rest", 8)), "ZIP/.npz archive"));
    CHECK(Contains(load("hello world, not an array"), "f.nd: not an NDArray file"));
    CHECK(Contains(ErrorOf([] { LoadNDArrays("/nonexistent/x.params"); }),
                   "load: cannot open /nonexistent/x.params"));
    CHECK(Contains(ErrorOf([] { FormatFromName("hdf5"); }), "unknown NDArray file format 'hdf5'"));
  }
}

TEST_CASE("fuzz: truncated and corrupted files load or raise tessera::Error") {
  std::vector<NDArray> arrays;
  std::vector<std::string> names;
  uint32_t seed = 7;
  for (DType t : {DType::kFloat32, DType::kInt64, DType::kFloat16, DType::kBool}) {
    arrays.push_back(RandomBits({3, 2}, t, seed++));
    names.push_back(DTypeName(t));
  }
  arrays.push_back(NDArray());
  names.push_back("none");
  std::vector<std::string> files = {SaveNDArraysToString(arrays, names),
                                    SaveNDArraysToString(arrays, {}),
                                    SaveNDArraysToString(arrays, names, Format::kMXNet)};
  // Hand-made legacy and sparse records widen the reader paths covered.
  Bytes legacy = MXNetHeader(2);
  legacy.u32(2).u32(1).u32(2).i32(1).i32(0).i32(0).f32(1).f32(2);
  legacy.u32(kV2).i32(2).i32(1).i64(1).i32(2).i64(2).i64(2).i32(1).i32(0).i32(0);
  legacy.i32(6).i32(1).i64(3).i32(6).i32(1).i64(1).f32(9).i64(0).i64(1).i64(1).i64(0);
  legacy.u64(0);
  files.push_back(legacy.s);
  std::mt19937 gen(2024);
  for (const std::string& good : files) {
    REQUIRE_NOTHROW(LoadNDArraysFromString(good));
    // Every proper prefix is incomplete: always an error.
    for (size_t n = 0; n < good.size(); ++n) {
      CAPTURE(n);
      CHECK_THROWS_AS(LoadNDArraysFromString(std::string_view(good).substr(0, n)), Error);
    }
    // Flipped bytes: loads or raises tessera::Error, never anything else.
    for (int trial = 0; trial < 1500; ++trial) {
      std::string bad = good;
      const int flips = 1 + static_cast<int>(gen() % 3);
      for (int k = 0; k < flips; ++k) bad[gen() % bad.size()] ^= static_cast<char>(1 + gen() % 255);
      try {
        LoadNDArraysFromString(bad);
      } catch (const Error&) {
      } catch (...) {
        FAIL("a damaged file raised something other than tessera::Error");
      }
    }
  }
}

TEST_CASE("real MXNet checkpoints load (TESSERA_MXNET_MODELS)") {
  const char* root = std::getenv("TESSERA_MXNET_MODELS");
  if (!root || !*root) {
    MESSAGE("TESSERA_MXNET_MODELS is not set: skipping the real-checkpoint check");
    return;
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() == ".params" || name == "legacy_ndarray.v0") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  REQUIRE(!files.empty());
  for (const fs::path& file : files) {
    CAPTURE(file.string());
    LoadedArrays got;
    REQUIRE_NOTHROW(got = LoadNDArrays(file.string()));
    std::cout << file.string() << ": " << got.arrays.size() << " arrays, " << got.variant << "\n";
    for (size_t i = 0; i < got.arrays.size(); ++i) {
      std::cout << "  " << (got.names.empty() ? "#" + std::to_string(i) : got.names[i]) << " "
                << got.arrays[i].shape() << " " << DTypeName(got.arrays[i].dtype()) << "\n";
      // Trained weights are finite.
      const std::vector<double> values = got.arrays[i].ToVector();
      CHECK(std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); }));
    }
    if (file.filename() == "legacy_ndarray.v0") {
      REQUIRE(got.arrays.size() == 6);
      std::vector<double> ramp(128);
      for (int i = 0; i < 128; ++i) ramp[i] = i;
      for (const NDArray& a : got.arrays) test::CheckClose(a, ramp, 0, 0);
      continue;
    }
    // Every key is arg:/aux: + a variable of the matching symbol file.
    const std::string stem = file.stem().string();  // "lenet-0001"
    const fs::path symbol = file.parent_path() / (stem.substr(0, stem.rfind('-')) + "-symbol.json");
    REQUIRE(fs::exists(symbol));
    std::ifstream in(symbol);
    const nlohmann::json graph = nlohmann::json::parse(in);
    std::set<std::string> variables;
    for (const auto& node : graph["nodes"])
      if (node["op"] == "null") variables.insert(node["name"].get<std::string>());
    REQUIRE(got.names.size() == got.arrays.size());
    for (const std::string& key : got.names) {
      CAPTURE(key);
      REQUIRE((key.starts_with("arg:") || key.starts_with("aux:")));
      CHECK(variables.count(key.substr(4)) == 1);
    }
  }
}
