// ImageRecordIter and the pieces under it: record indexes (read and fed
// cut and corrupted files), the augmenter's geometry, and the threaded
// iterator against a one-thread run of itself, over random configurations,
// resets and damaged files.
#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/base/error.h"
#include "engine/io/image_augment.h"
#include "engine/io/image_codec.h"
#include "engine/io/image_record_iter.h"
#include "engine/io/record_index.h"
#include "engine/io/recordio.h"
#include "engine/scheduler/engine.h"
#include "tests/cpp/temp_dir.h"
#include "tests/cpp/test_util.h"

using namespace tessera;
using namespace tessera::io;
using tessera::test::Contains;
using tessera::test::ErrorOf;

namespace {

Image Pattern(int64_t k, int64_t h, int64_t w) {
  Image im;
  im.height = h;
  im.width = w;
  im.channels = 3;
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t c = 0; c < 3; ++c)
        im.pixels.push_back(static_cast<uint8_t>((k * 31 + y * 7 + x * 3 + c * 50) % 256));
  return im;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// n PNG records of h x w images (label k, key k) and their index.
void MakeRecords(const std::string& rec, const std::string& idx, int n, int64_t h, int64_t w,
                 ImageFormat format = ImageFormat::kPng) {
  RecordWriter wr(rec, "test");
  std::string index;
  for (int k = 0; k < n; ++k) {
    index += std::to_string(k) + "\t" + std::to_string(wr.Tell()) + "\n";
    ImageRecordHeader hd;
    hd.label = static_cast<float>(k);
    hd.id = static_cast<uint64_t>(k);
    wr.Write(PackImageRecordHeader(hd) + EncodeImage(Pattern(k, h, w), format, 95, "t"));
  }
  wr.Close();
  WriteAll(idx, index);
}

struct Run {
  std::vector<std::vector<uint8_t>> data;
  std::vector<std::vector<float>> labels;
  std::vector<std::vector<uint64_t>> index;
  std::vector<int64_t> pads;
  bool operator==(const Run&) const = default;
};

Run Epochs(ImageRecordIter& it, int epochs) {
  Run r;
  for (int e = 0; e < epochs; ++e) {
    while (auto b = it.Next()) {
      std::vector<uint8_t> d(static_cast<size_t>(b->data.Size()) * DTypeSize(b->data.dtype()));
      b->data.SyncCopyToCPU(d.data(), static_cast<size_t>(b->data.Size()));
      r.data.push_back(std::move(d));
      std::vector<float> l(static_cast<size_t>(b->label.Size()));
      b->label.SyncCopyToCPU(l.data(), l.size());
      r.labels.push_back(std::move(l));
      r.index.push_back(b->index);
      r.pads.push_back(b->pad);
    }
    it.Reset();
  }
  return r;
}

}  // namespace

TEST_CASE(
    "record index: read, sorted by offset; every cut and corruption is an error or a prefix") {
  test::TempDir dir;
  const std::string rec = dir / "a.rec", idx = dir / "a.idx";
  MakeRecords(rec, idx, 6, 5, 5);
  const uint64_t bytes = ReadAll(rec).size();
  const std::vector<RecordRef> refs = ReadRecordIndex(idx, bytes, "t");
  REQUIRE(refs.size() == 6);
  const std::vector<RecordRef> scanned = ScanRecordOffsets(rec, "t");
  REQUIRE(scanned.size() == 6);
  for (size_t i = 0; i < 6; ++i) {
    CHECK(refs[i].offset == scanned[i].offset);
    CHECK(refs[i].key == i);
  }
  // Unsorted lines come back in file order.
  WriteAll(idx, "5\t" + std::to_string(refs[5].offset) + "\n0\t0\r\n");
  const auto two = ReadRecordIndex(idx, bytes, "t");
  CHECK(two[0].key == 0);
  CHECK(two[1].key == 5);
  CHECK(Contains(ErrorOf([&] { WriteAll(idx, "1\t0\n1\t8\n"), ReadRecordIndex(idx, bytes, "t"); }),
                 "line 2: key 1 is given twice"));
  CHECK(Contains(ErrorOf([&] { WriteAll(idx, "1\t0\n2\t0\n"), ReadRecordIndex(idx, bytes, "t"); }),
                 "both point at offset 0"));
  CHECK(Contains(ErrorOf([&] { WriteAll(idx, "1\t6\n"), ReadRecordIndex(idx, bytes, "t"); }),
                 "not the start of a record"));
  CHECK(Contains(ErrorOf([&] { WriteAll(idx, "1\t-4\n"), ReadRecordIndex(idx, bytes, "t"); }),
                 "expected 'key<TAB>offset'"));
  CHECK(Contains(ErrorOf([&] {
                   WriteAll(idx, "1\t99999999999999999999999\n"), ReadRecordIndex(idx, bytes, "t");
                 }),
                 "expected 'key<TAB>offset'"));
  // Every cut of the index, and random bytes changed: parsed or an Error.
  std::string text;
  for (const RecordRef& r : refs)
    text += std::to_string(r.key) + "\t" + std::to_string(r.offset) + "\n";
  std::mt19937 rng(5);
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    WriteAll(idx, text.substr(0, cut));
    size_t n = 0;
    try {
      n = ReadRecordIndex(idx, bytes, "t").size();
    } catch (const Error&) {
    }
    CHECK(n <= refs.size());
  }
  for (int trial = 0; trial < 300; ++trial) {
    std::string bad = text;
    bad[rng() % bad.size()] = static_cast<char>(rng() % 256);
    WriteAll(idx, bad);
    try {
      ReadRecordIndex(idx, bytes, "t");
    } catch (const Error&) {
    }
  }
}

TEST_CASE("augment: pad with fill, centred and random crops, scale, random resized crop") {
  AugmentParams p;
  p.height = p.width = 4;
  std::mt19937_64 rng(1);
  const Image src = Pattern(2, 6, 8);
  Image out = AugmentImage(src, p, rng, "t");
  CHECK(out.height == 4);
  CHECK(out.width == 4);
  CHECK(out.pixels[0] == src.pixels[static_cast<size_t>((1 * 8 + 2) * 3)]);  // centre (2, 1)
  p.pad = 1;
  p.fill_value = 9;
  p.height = 8;
  p.width = 10;
  out = AugmentImage(src, p, rng, "t");  // padded to 10x8 exactly
  CHECK(out.pixels[0] == 9);
  CHECK(out.pixels[static_cast<size_t>((1 * 10 + 1) * 3)] == src.pixels[0]);
  // Scale 2, no stretch: the canvas doubles.
  AugmentParams s;
  s.height = s.width = 3;
  s.min_random_scale = s.max_random_scale = 2;
  CHECK(AugmentImage(src, s, rng, "t").width == 3);
  AugmentParams r;
  r.height = 5;
  r.width = 7;
  r.random_resized_crop = true;
  r.min_random_area = 0.1f;
  r.max_aspect_ratio = 2;
  for (int i = 0; i < 20; ++i) {
    const Image o = AugmentImage(src, r, rng, "t");
    CHECK(o.height == 5);
    CHECK(o.width == 7);
  }
  // Mirror writes columns right to left; normalisation per channel.
  Normalize n;
  n.mean[0] = 1;
  n.mult[0] = 2;
  Image tiny = Pattern(0, 1, 2);
  std::vector<float> chw(6);
  WriteCHW(tiny, true, n, chw.data());
  CHECK(chw[0] == doctest::Approx((tiny.pixels[3] - 1) * 2));
  CHECK(chw[1] == doctest::Approx((tiny.pixels[0] - 1) * 2));
  AugmentParams bad;
  bad.height = bad.width = 4;
  bad.min_random_area = 0;
  CHECK(Contains(ErrorOf([&] { CheckAugmentParams(bad, "It"); }), "It: need 0 < min_random_area"));
  bad = AugmentParams();
  bad.height = bad.width = 4;
  bad.channels = 4;
  CHECK(Contains(ErrorOf([&] { CheckAugmentParams(bad, "It"); }), "1 or 3 channels"));
}

TEST_CASE("ImageRecordIter: random configurations and resets match one thread") {
  test::TempDir dir;
  const std::string rec = dir / "a.rec", idx = dir / "a.idx";
  const std::string jrec = dir / "j.rec", jidx = dir / "j.idx";
  MakeRecords(rec, idx, 23, 9, 11);
  MakeRecords(jrec, jidx, 23, 37, 45, ImageFormat::kJpeg);  // windows decoded alone
  std::mt19937 rng(11);
  for (int trial = 0; trial < 16; ++trial) {
    const bool jpeg = trial % 4 >= 2;
    ImageRecordIterParams p;
    p.path_imgrec = jpeg ? jrec : rec;
    p.path_imgidx = trial % 3 == 0 ? "" : (jpeg ? jidx : idx);
    p.aug.height = 6;
    p.aug.width = 7;
    p.aug.rand_crop = true;
    p.aug.rand_mirror = trial % 2 == 0;
    p.aug.random_resized_crop = trial % 4 == 1 || trial % 8 == 3;
    p.aug.min_random_area = 0.3f;
    p.dtype = DType::kUint8;
    p.batch_size = 1 + static_cast<int64_t>(rng() % 7);
    p.shuffle = trial % 2 == 1;
    p.seed = rng();
    p.last_batch = static_cast<LastBatch>(rng() % 3);
    p.preprocess_threads = 1;
    p.prefetch_buffer = 1;
    ImageRecordIter one(p);
    const Run ref = Epochs(one, 3);
    p.preprocess_threads = 1 + static_cast<int>(rng() % 8);
    p.prefetch_buffer = 1 + static_cast<int>(rng() % 5);
    ImageRecordIter many(p);
    CHECK_MESSAGE(Epochs(many, 3) == ref, "trial " << trial << ", threads " << p.preprocess_threads
                                                   << ", prefetch " << p.prefetch_buffer);
    // Resets at random points, and batches still in flight, leave the next
    // epochs as they would have been.
    ImageRecordIter again(p);
    for (int k = 0; k < static_cast<int>(rng() % 3); ++k) again.Next();
    again.Reset();
    const Run after = Epochs(again, 1);
    CHECK(after.index.size() >= 1);
  }
  engine::Engine::Get()->WaitForAll();
}

TEST_CASE("ImageRecordIter: damaged files give errors or counted skips, never a crash") {
  test::TempDir dir;
  const std::string rec = dir / "a.rec", idx = dir / "a.idx", cut = dir / "cut.rec";
  MakeRecords(rec, idx, 8, 5, 5);
  const std::string bytes = ReadAll(rec);
  std::mt19937 rng(3);
  int errors = 0, skips = 0, fine = 0;
  for (int trial = 0; trial < 80; ++trial) {
    std::string bad = bytes;
    if (trial % 2 == 0) {
      bad.resize(rng() % bad.size());
    } else {
      for (int k = 0; k < 3; ++k) bad[rng() % bad.size()] = static_cast<char>(rng() % 256);
    }
    WriteAll(cut, bad);
    ImageRecordIterParams p;
    p.path_imgrec = cut;
    p.path_imgidx = trial % 4 < 2 ? idx : "";
    p.aug.height = p.aug.width = 5;
    p.batch_size = 3;
    p.preprocess_threads = 2;
    p.skip_corrupt = trial % 3 == 0;
    try {
      ImageRecordIter it(p);
      Epochs(it, 1);
      it.skipped().count > 0 ? ++skips : ++fine;
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("ImageRecordIter") != std::string::npos);
      ++errors;
    }
  }
  CHECK(errors > 0);
  CHECK(skips + fine > 0);
}
