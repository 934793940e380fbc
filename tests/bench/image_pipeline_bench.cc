// The image pipeline against its limit: images per second of
// ImageRecordIter (decode, random resized crop to 224, mirror, normalise,
// batches of 64) on N threads, against libjpeg-turbo decoding the same
// records on the same number of threads with nothing else, interleaved rep
// by rep (best of the reps; noise only slows a run down).
//
//   image_pipeline_bench REC IDX [THREADS=2] [REPS=3]
//
// scripts/bench/image_iter_vs_torch.sh makes the records and runs this with
// the Lua and PyTorch loaders beside it; stdout carries `name: value unit`.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "engine/io/image_codec.h"
#include "engine/io/image_record_iter.h"
#include "engine/io/record_index.h"
#include "engine/io/recordio.h"

using namespace tessera;
using namespace tessera::io;

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Every record decoded once, the records dealt out to `threads` threads as
// the iterator deals them (the next record to the next free thread).
double DecodeOnly(const std::string& rec, const std::vector<RecordRef>& refs, int threads) {
  std::atomic<size_t> next{0};
  const double t0 = Now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      RecordReader rd(rec, "bench");
      std::string buf;
      for (size_t i; (i = next.fetch_add(1)) < refs.size();) {
        rd.Seek(refs[i].offset);
        rd.Next(&buf);
        const ImageRecordHeader h = UnpackImageRecordHeader(buf, "bench");
        const size_t at = kImageRecordHeaderBytes + 4 * size_t{h.flag};
        DecodeImage(std::string_view(buf).substr(at), 3, "bench");
      }
    });
  for (std::thread& t : pool) t.join();
  return static_cast<double>(refs.size()) / (Now() - t0);
}

// One epoch of the iterator (after its constructor's, which warms it).
double Iterate(ImageRecordIter& it) {
  it.Reset();
  const double t0 = Now();
  int64_t images = 0;
  while (auto b = it.Next()) images += b->data.shape()[0] - b->pad;
  return static_cast<double>(images) / (Now() - t0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s REC IDX [THREADS=2] [REPS=3]\n", argv[0]);
    return 2;
  }
  const std::string rec = argv[1], idx = argv[2];
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;
  const int reps = argc > 4 ? std::atoi(argv[4]) : 3;
  ImageRecordIterParams p;
  p.path_imgrec = rec;
  p.path_imgidx = idx;
  p.aug.height = p.aug.width = 224;
  p.aug.random_resized_crop = true;
  p.aug.min_random_area = 0.08f;
  p.aug.max_aspect_ratio = 4.0f / 3;
  p.aug.min_aspect_ratio = 3.0f / 4;
  p.aug.rand_mirror = true;
  const float mean[3] = {123.68f, 116.28f, 103.53f}, std_[3] = {58.395f, 57.12f, 57.375f};
  for (int c = 0; c < 3; ++c) {
    p.norm.mean[c] = mean[c];
    p.norm.mult[c] = 1 / std_[c];
  }
  p.batch_size = 64;
  p.shuffle = true;
  p.preprocess_threads = threads;
  p.last_batch = LastBatch::kDiscard;
  const std::vector<RecordRef> refs =
      ReadRecordIndex(idx, std::filesystem::file_size(rec), "bench");
  ImageRecordIter it(p);
  Iterate(it);  // warm: the page cache, the pool, OpenCV and libjpeg opened
  double best_limit = 0, best_iter = 0;
  for (int r = 0; r < reps; ++r) {
    best_limit = std::max(best_limit, DecodeOnly(rec, refs, threads));
    best_iter = std::max(best_iter, Iterate(it));
  }
  std::printf("image_decode_limit_%dt: %.1f images/s\n", threads, best_limit);
  std::printf("image_record_iter_%dt: %.1f images/s\n", threads, best_iter);
  std::printf("image_record_iter_vs_limit: %.3f ratio\n", best_iter / best_limit);
  return 0;
}
