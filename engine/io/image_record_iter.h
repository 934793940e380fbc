// ImageRecordIter: batches of images from a RecordIO file (MXNet's
// ImageRecordIter), read, decoded and augmented on a pool of threads.
//
//   ImageRecordIterParams p;
//   p.path_imgrec = "train.rec";  p.path_imgidx = "train.idx";
//   p.aug.height = p.aug.width = 224;  p.batch_size = 64;  p.shuffle = true;
//   ImageRecordIter it(p);
//   while (auto b = it.Next()) train(b->data, b->label);   // b->pad: filler rows
//   it.Reset();                                            // the next epoch
//
// How the work is split. An epoch is a plan: the part's records (sharded
// by num_parts/part_index, shuffled per epoch, padded or cut to whole
// batches). Each of `preprocess_threads` workers takes the next image of
// the plan, reads its record with its own reader, decodes, augments and
// writes it straight into its row of the batch's arrays, which are made
// (pooled storage; pinned when p.ctx is cpu_pinned) when the batch's first
// image is taken. Workers stay within `prefetch_buffer` batches of the one
// Next() returns next; a batch is handed over when its last image is in,
// its arrays unseen by anyone before, so no copy follows. Every image draws
// its augmentation from a generator seeded by (seed, epoch, position), so a
// run gives the same batches whatever the number of threads.
//
// Bad records: an image that fails to decode or augment is an error of its
// batch, rethrown by Next() with the file, offset and key; with
// skip_corrupt it is counted (Skipped()) and the next records of the plan
// stand in for it. A file whose framing is broken is an error either way.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/base/context.h"
#include "engine/base/dtype.h"
#include "engine/io/image_augment.h"
#include "engine/io/record_index.h"
#include "engine/io/recordio.h"
#include "engine/ndarray/ndarray.h"

namespace tessera::io {

enum class LastBatch { kPad, kDiscard, kRollOver };

struct ImageRecordIterParams {
  std::string path_imgrec, path_imgidx;  // no index: the file is read through once
  AugmentParams aug;                     // data_shape is (aug.channels, aug.height, aug.width)
  int64_t batch_size = 0;
  int label_width = 1;
  DType dtype = DType::kFloat32;  // float32 (normalised) or uint8 (raw pixels)
  Normalize norm;                 // float32 only
  bool shuffle = false;
  uint64_t seed = 0;
  int64_t shuffle_chunk_mb = 0;  // > 0: shuffle chunks of this size, then records within each
  int num_parts = 1, part_index = 0;
  int preprocess_threads = 4, prefetch_buffer = 4;
  LastBatch last_batch = LastBatch::kPad;
  bool skip_corrupt = false;
  Context ctx = Context::CPU();  // cpu, or cpu_pinned for batches bound for a GPU
  std::string what = "ImageRecordIter";
};

struct ImageBatch {
  NDArray data;   // (batch, c, h, w)
  NDArray label;  // (batch) or (batch, label_width), float32
  int64_t pad = 0;
  std::vector<uint64_t> index;  // each row's record key
};

class ImageRecordIter {
 public:
  // Checks the parameters and the files, plans the first epoch and starts
  // the workers. `on_ready` is called from a worker whenever Ready() may
  // have become true.
  explicit ImageRecordIter(ImageRecordIterParams p, std::function<void()> on_ready = {});
  ~ImageRecordIter();  // stops and joins the workers
  ImageRecordIter(const ImageRecordIter&) = delete;
  ImageRecordIter& operator=(const ImageRecordIter&) = delete;

  // Starts the next epoch (reshuffled), dropping what is left of this one.
  void Reset();
  // True when Next would not block.
  bool Ready() const;
  // The next batch, waiting for it; nullopt at the end of the epoch.
  std::optional<ImageBatch> Next();

  int64_t num_records() const { return static_cast<int64_t>(records_.size()); }  // this part's
  int64_t num_batches() const;                                                   // this epoch's
  struct Skipped {
    int64_t count = 0;
    std::string first;  // the first skipped record's error
  };
  // The records skipped for the batches Next() has returned.
  Skipped skipped() const;
  const ImageRecordIterParams& params() const { return p_; }

 private:
  struct Pending;
  struct Plan;
  std::shared_ptr<const Plan> MakePlan();
  std::shared_ptr<Pending> NewPending(int64_t batch) const;
  void WorkerLoop(std::unique_ptr<RecordReader> reader);
  bool HasWork() const;
  struct Scratch;  // a worker's reader and buffers, reused image after image
  void Produce(const RecordRef& ref, uint64_t seed, Pending& batch, int64_t row, Scratch& s) const;
  static void KeepLowestRowError(Pending& batch, int64_t row, std::exception_ptr error);
  std::exception_ptr ProduceOrSkip(const Plan& plan, int64_t pos, Pending& batch, Scratch& s,
                                   Skipped* skipped) const;

  const ImageRecordIterParams p_;
  const std::function<void()> on_ready_;
  uint64_t rec_bytes_ = 0;
  std::vector<RecordRef> records_;  // this part's, in file order

  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // workers: an image to take, or stop
  std::condition_variable take_cv_;  // Next: a batch complete
  std::shared_ptr<const Plan> plan_;
  uint64_t epoch_ = 0;            // plans made so far; also seeds shuffles and draws
  std::vector<RecordRef> carry_;  // roll_over: what the last epoch read to its end left
  bool carried_ = false;          // this epoch's leftovers were carried
  int64_t next_item_ = 0;         // the plan position the next worker takes
  int64_t next_take_ = 0;         // the batch Next returns next
  std::deque<std::shared_ptr<Pending>> window_;  // batches next_take_, next_take_ + 1, ...
  Skipped skipped_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace tessera::io
