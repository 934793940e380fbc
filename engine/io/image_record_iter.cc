#include "engine/io/image_record_iter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <utility>

#include "engine/base/error.h"
#include "engine/base/regular_file.h"

namespace tessera::io {
namespace {

// A stand-in search gives up after this many failing records in a row.
constexpr int64_t kMaxStandIns = 64;
constexpr int kMaxThreads = 256;

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t MixSeed(uint64_t seed, uint64_t epoch, uint64_t pos) {
  return SplitMix64(seed ^ SplitMix64(epoch * 0x100000001b3ULL ^ SplitMix64(pos)));
}

void CheckParams(const ImageRecordIterParams& p) {
  const std::string_view w = p.what;
  TS_CHECK(!p.path_imgrec.empty()) << w << ": path_imgrec is required";
  TS_CHECK(p.batch_size >= 1) << w << ": batch_size must be at least 1, got " << p.batch_size;
  TS_CHECK(p.label_width >= 1 && p.label_width <= 1 << 20)
      << w << ": label_width must be from 1 to 1048576, got " << p.label_width;
  TS_CHECK(p.dtype == DType::kFloat32 || p.dtype == DType::kUint8)
      << w << ": dtype must be float32 or uint8, got " << DTypeName(p.dtype);
  TS_CHECK(p.num_parts >= 1) << w << ": num_parts must be at least 1, got " << p.num_parts;
  TS_CHECK(p.part_index >= 0 && p.part_index < p.num_parts)
      << w << ": part_index must be from 0 to num_parts - 1 = " << p.num_parts - 1 << ", got "
      << p.part_index;
  TS_CHECK(p.preprocess_threads >= 1 && p.preprocess_threads <= kMaxThreads)
      << w << ": preprocess_threads must be from 1 to " << kMaxThreads << ", got "
      << p.preprocess_threads;
  TS_CHECK(p.prefetch_buffer >= 1 && p.prefetch_buffer <= 1024)
      << w << ": prefetch_buffer must be from 1 to 1024, got " << p.prefetch_buffer;
  TS_CHECK(p.shuffle_chunk_mb >= 0 && p.shuffle_chunk_mb <= (int64_t{1} << 30))
      << w << ": shuffle_chunk_size must be a size in MB from 0, got " << p.shuffle_chunk_mb;
  TS_CHECK(p.ctx.is_cpu()) << w << ": batches are made in host memory (cpu or cpu_pinned), not "
                           << p.ctx.ToString();
  for (int c = 0; c < 3; ++c)
    TS_CHECK(std::isfinite(p.norm.mult[c]) && std::isfinite(p.norm.mean[c]))
        << w << ": mean and scale / std must be finite (is a std 0?)";
  CheckAugmentParams(p.aug, w);
}

// Record sizes for the chunked shuffle: the distance to the next record.
uint64_t RecordBytes(const std::vector<RecordRef>& recs, size_t i, uint64_t file_bytes) {
  return (i + 1 < recs.size() ? recs[i + 1].offset : file_bytes) - recs[i].offset;
}

// Consecutive records grouped into chunks of about `chunk` bytes; the chunks
// in a random order, then the records of each chunk: reading stays within
// one chunk of the file at a time (files larger than memory).
void ChunkShuffle(std::vector<RecordRef>* recs, uint64_t chunk, uint64_t file_bytes,
                  std::mt19937_64& rng) {
  std::vector<std::pair<size_t, size_t>> chunks;  // [begin, end)
  size_t begin = 0;
  uint64_t bytes = 0;
  for (size_t i = 0; i < recs->size(); ++i) {
    bytes += RecordBytes(*recs, i, file_bytes);
    if (bytes >= chunk || i + 1 == recs->size()) {
      chunks.emplace_back(begin, i + 1);
      begin = i + 1;
      bytes = 0;
    }
  }
  std::shuffle(chunks.begin(), chunks.end(), rng);
  std::vector<RecordRef> out;
  out.reserve(recs->size());
  for (const auto& [b, e] : chunks) {
    const size_t at = out.size();
    out.insert(out.end(), recs->begin() + static_cast<std::ptrdiff_t>(b),
               recs->begin() + static_cast<std::ptrdiff_t>(e));
    std::shuffle(out.begin() + static_cast<std::ptrdiff_t>(at), out.end(), rng);
  }
  *recs = std::move(out);
}

}  // namespace

// ---- an epoch's plan, and the batches being made ----

struct ImageRecordIter::Plan {
  std::vector<RecordRef> order;  // num_batches * batch_size records
  int64_t num_batches = 0;
  int64_t last_pad = 0;  // filler rows of the last batch
  uint64_t epoch = 0;
  std::vector<RecordRef> leftover;  // roll_over: carried once the epoch is read to its end
};

struct ImageRecordIter::Scratch {
  std::unique_ptr<RecordReader> reader;
  std::string record;
  Image window, resized;  // their memory serves every image: no page faults per image
};

struct ImageRecordIter::Pending {
  NDArray data, label;
  char* data_ptr = nullptr;
  float* label_ptr = nullptr;
  size_t row_bytes = 0;
  std::vector<uint64_t> index;
  int64_t left = 0;  // images not yet written (guarded by mu_)
  int64_t pad = 0;
  // The failed image of the lowest row, whichever thread finished first, so
  // the error a batch reports does not depend on thread timing (guarded by mu_).
  std::exception_ptr error;
  int64_t error_row = 0;
  Skipped skipped;  // records skipped for its images (guarded by mu_)
};

ImageRecordIter::ImageRecordIter(ImageRecordIterParams p, std::function<void()> on_ready)
    : p_(std::move(p)), on_ready_(std::move(on_ready)) {
  CheckParams(p_);
  rec_bytes_ = CheckRegularFile(p_.path_imgrec, p_.what);
  std::vector<RecordRef> all = p_.path_imgidx.empty()
                                   ? ScanRecordOffsets(p_.path_imgrec, p_.what)
                                   : ReadRecordIndex(p_.path_imgidx, rec_bytes_, p_.what);
  const size_t n = all.size(), parts = static_cast<size_t>(p_.num_parts);
  const size_t k = static_cast<size_t>(p_.part_index);
  records_.assign(all.begin() + static_cast<std::ptrdiff_t>(n * k / parts),
                  all.begin() + static_cast<std::ptrdiff_t>(n * (k + 1) / parts));
  TS_CHECK(!records_.empty()) << p_.what << ": " << p_.path_imgrec << " has " << n
                              << " records, none in part " << k << " of " << parts;
  std::vector<std::unique_ptr<RecordReader>> readers;
  for (int t = 0; t < p_.preprocess_threads; ++t)
    readers.push_back(std::make_unique<RecordReader>(p_.path_imgrec, p_.what));
  plan_ = MakePlan();
  for (auto& r : readers)
    workers_.emplace_back([this, rd = std::move(r)]() mutable { WorkerLoop(std::move(rd)); });
}

ImageRecordIter::~ImageRecordIter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

// The next epoch's records (under mu_, or before the workers start).
std::shared_ptr<const ImageRecordIter::Plan> ImageRecordIter::MakePlan() {
  auto plan = std::make_shared<Plan>();
  plan->epoch = epoch_++;
  std::vector<RecordRef> recs = records_;
  if (p_.shuffle) {
    std::mt19937_64 rng(MixSeed(p_.seed, plan->epoch, ~uint64_t{0}));
    if (p_.shuffle_chunk_mb > 0)
      ChunkShuffle(&recs, static_cast<uint64_t>(p_.shuffle_chunk_mb) << 20, rec_bytes_, rng);
    else
      std::shuffle(recs.begin(), recs.end(), rng);
  }
  std::vector<RecordRef>& order = plan->order;
  order = std::move(carry_);
  carry_.clear();
  order.insert(order.end(), recs.begin(), recs.end());
  const size_t b = static_cast<size_t>(p_.batch_size), n = order.size(), rem = n % b;
  if (rem != 0) {
    if (p_.last_batch == LastBatch::kPad) {
      plan->last_pad = static_cast<int64_t>(b - rem);
      for (size_t i = 0; i < b - rem; ++i) order.push_back(order[i % n]);  // from the start
    } else {
      if (p_.last_batch == LastBatch::kRollOver)
        plan->leftover.assign(order.end() - static_cast<std::ptrdiff_t>(rem), order.end());
      order.resize(n - rem);
    }
  }
  plan->num_batches = static_cast<int64_t>(order.size() / b);
  return plan;
}

std::shared_ptr<ImageRecordIter::Pending> ImageRecordIter::NewPending(int64_t batch) const {
  auto pb = std::make_shared<Pending>();
  const AugmentParams& a = p_.aug;
  pb->data = NDArray(Shape{p_.batch_size, a.channels, a.height, a.width}, p_.ctx, p_.dtype);
  pb->label = p_.label_width == 1 ? NDArray(Shape{p_.batch_size}, p_.ctx)
                                  : NDArray(Shape{p_.batch_size, p_.label_width}, p_.ctx);
  // Fresh arrays: nothing is pending on them, so the workers may write them
  // before they are handed over.
  pb->data_ptr = static_cast<char*>(pb->data.data().dptr_);
  pb->label_ptr = static_cast<float*>(pb->label.data().dptr_);
  pb->row_bytes = static_cast<size_t>(a.channels * a.height * a.width) * DTypeSize(p_.dtype);
  pb->index.resize(static_cast<size_t>(p_.batch_size));
  pb->left = p_.batch_size;
  pb->pad = batch + 1 == plan_->num_batches ? plan_->last_pad : 0;
  return pb;
}

void ImageRecordIter::Reset() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    plan_ = MakePlan();
    carried_ = false;
    next_item_ = next_take_ = 0;
    window_.clear();  // workers finishing images of these drop them
  }
  work_cv_.notify_all();
}

int64_t ImageRecordIter::num_batches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return plan_->num_batches;
}

ImageRecordIter::Skipped ImageRecordIter::skipped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return skipped_;
}

bool ImageRecordIter::Ready() const {
  std::lock_guard<std::mutex> lock(mu_);
  return next_take_ >= plan_->num_batches || (!window_.empty() && window_.front()->left == 0);
}

std::optional<ImageBatch> ImageRecordIter::Next() {
  std::unique_lock<std::mutex> lock(mu_);
  if (next_take_ >= plan_->num_batches) {
    if (!carried_) carry_ = plan_->leftover;  // the epoch was read to its end
    carried_ = true;
    return std::nullopt;
  }
  take_cv_.wait(lock, [&] { return !window_.empty() && window_.front()->left == 0; });
  std::shared_ptr<Pending> pb = std::move(window_.front());
  window_.pop_front();
  ++next_take_;
  if (pb->skipped.count > 0) {  // counted as the batches are read, not as they are made
    if (skipped_.count == 0) skipped_.first = std::move(pb->skipped.first);
    skipped_.count += pb->skipped.count;
  }
  lock.unlock();
  work_cv_.notify_all();  // the window moved: room for more images
  if (pb->error) std::rethrow_exception(pb->error);
  return ImageBatch{std::move(pb->data), std::move(pb->label), pb->pad, std::move(pb->index)};
}

// ---- the workers ----

bool ImageRecordIter::HasWork() const {
  return next_item_ < static_cast<int64_t>(plan_->order.size()) &&
         next_item_ / p_.batch_size < next_take_ + p_.prefetch_buffer;
}

void ImageRecordIter::WorkerLoop(std::unique_ptr<RecordReader> reader) {
  Scratch scratch;
  scratch.reader = std::move(reader);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || HasWork(); });
    if (stop_) return;
    const std::shared_ptr<const Plan> plan = plan_;
    const int64_t pos = next_item_++;
    const int64_t batch = pos / p_.batch_size;
    while (static_cast<int64_t>(window_.size()) <= batch - next_take_)
      window_.push_back(NewPending(next_take_ + static_cast<int64_t>(window_.size())));
    std::shared_ptr<Pending> pb = window_[static_cast<size_t>(batch - next_take_)];
    lock.unlock();
    Skipped skips;
    std::exception_ptr error = ProduceOrSkip(*plan, pos, *pb, scratch, &skips);
    lock.lock();
    if (plan != plan_) continue;  // Reset came meanwhile: the batch is dropped
    if (skips.count > 0) {
      if (pb->skipped.count == 0) pb->skipped.first = std::move(skips.first);
      pb->skipped.count += skips.count;
    }
    if (error) KeepLowestRowError(*pb, pos % p_.batch_size, std::move(error));
    TS_DCHECK(pb->left > 0);
    const bool done = --pb->left == 0;
    // Let go before the batch can be taken: its last owner, who frees its
    // error, is then the thread that took it.
    pb.reset();
    if (!done) continue;
    take_cv_.notify_all();
    if (on_ready_) {
      lock.unlock();
      on_ready_();
      lock.lock();
    }
  }
}

// A batch reports the error of its lowest failed row (mu_ held).
void ImageRecordIter::KeepLowestRowError(Pending& batch, int64_t row, std::exception_ptr error) {
  if (batch.error && batch.error_row <= row) return;
  batch.error = std::move(error);
  batch.error_row = row;
}

// The plan's record at `pos` into its row, or, with skip_corrupt, the next
// records of the plan in its place while one fails.
std::exception_ptr ImageRecordIter::ProduceOrSkip(const Plan& plan, int64_t pos, Pending& batch,
                                                  Scratch& s, Skipped* skipped) const {
  const int64_t n = static_cast<int64_t>(plan.order.size());
  const int64_t row = pos % p_.batch_size;
  const uint64_t seed = MixSeed(p_.seed, plan.epoch, static_cast<uint64_t>(pos));
  for (int64_t k = 0; k < std::min(n, kMaxStandIns); ++k) {
    const RecordRef& ref = plan.order[static_cast<size_t>((pos + k) % n)];
    try {
      Produce(ref, seed, batch, row, s);
      return nullptr;
    } catch (const Error& e) {
      std::string why = p_.what + ": " + p_.path_imgrec + ", record " + std::to_string(ref.key) +
                        " at offset " + std::to_string(ref.offset) + ": " + e.what();
      if (!p_.skip_corrupt) return std::make_exception_ptr(Error(why));
      if (skipped->count++ == 0) skipped->first = std::move(why);
    } catch (...) {
      return std::current_exception();
    }
  }
  return std::make_exception_ptr(
      Error(p_.what + ": " + std::to_string(std::min(n, kMaxStandIns)) +
            " records in a row could not be read (skip_corrupt); the first: " + skipped->first));
}

// One record: its header's label(s), the image decoded, augmented and
// written into row `row` of the batch.
void ImageRecordIter::Produce(const RecordRef& ref, uint64_t seed, Pending& batch, int64_t row,
                              Scratch& s) const {
  std::string& buf = s.record;
  s.reader->Seek(ref.offset);
  TS_CHECK(s.reader->Next(&buf)) << "no record there (the index points at the end of the file)";
  const ImageRecordHeader h = UnpackImageRecordHeader(buf, "the record");
  float* label = batch.label_ptr + row * p_.label_width;
  size_t at = kImageRecordHeaderBytes;
  if (h.flag > 0) {
    TS_CHECK(static_cast<int64_t>(h.flag) == p_.label_width)
        << "the record has a label of " << h.flag << " values, but label_width is "
        << p_.label_width;
    TS_CHECK(buf.size() >= at + 4 * size_t{h.flag})
        << "a record of " << buf.size() << " bytes cannot hold its " << h.flag << " labels";
    std::memcpy(label, buf.data() + at, 4 * size_t{h.flag});
    at += 4 * size_t{h.flag};
  } else {
    TS_CHECK(p_.label_width == 1) << "the record has one label, but label_width is "
                                  << p_.label_width;
    *label = h.label;
  }
  std::mt19937_64 rng(seed);
  const std::string_view bytes = std::string_view(buf).substr(at);
  const int channels = static_cast<int>(p_.aug.channels);
  Image full;
  ImageView view{&full, {}};
  if (CropsDirectly(p_.aug)) {  // decode only the window that reaches the output
    int64_t w = 0, h = 0;
    PeekImageSize(bytes, &w, &h, "image");
    const ImageRegion window = PlanWindow(w, h, p_.aug, rng, "image");
    const ImageRegion at = DecodeImageRegionInto(bytes, channels, window, "image", &s.window);
    view = FromWindow(s.window, at, p_.aug, rng, "image", &s.resized);
  } else {
    full = AugmentImage(DecodeImage(bytes, channels, "image"), p_.aug, rng, "image");
    view.window = {0, 0, full.width, full.height};
  }
  const bool mirror = DrawMirror(p_.aug, rng);
  char* dst = batch.data_ptr + static_cast<size_t>(row) * batch.row_bytes;
  if (p_.dtype == DType::kUint8)
    WriteCHW(view, mirror, reinterpret_cast<uint8_t*>(dst));
  else
    WriteCHW(view, mirror, p_.norm, reinterpret_cast<float*>(dst));
  batch.index[static_cast<size_t>(row)] = ref.key;
}

}  // namespace tessera::io
