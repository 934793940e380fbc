#include "engine/io/batch_prefetcher.h"

#include <cstring>
#include <memory>
#include <utility>

#include "engine/base/error.h"
#include "engine/scheduler/engine.h"

namespace tessera::io {

using engine::Engine;
using engine::FnProperty;

BatchPrefetcher::BatchPrefetcher(std::vector<NDArray> sources, int depth,
                                 std::function<void()> on_ready)
    : sources_(std::move(sources)), depth_(depth), on_ready_(std::move(on_ready)) {
  TS_CHECK(!sources_.empty()) << "PrefetchingIter: no arrays to take batches from";
  TS_CHECK(depth_ >= 1) << "PrefetchingIter: depth must be at least 1, got " << depth_;
  const NDArray& first = sources_.front();
  for (const NDArray& s : sources_) {
    TS_CHECK(!s.is_none() && s.ndim() >= 1) << "PrefetchingIter: a source array has no axes";
    TS_CHECK(s.ctx().is_cpu()) << "PrefetchingIter: source arrays must be on cpu, got "
                               << s.ctx().ToString() << " (copy the batches to the device)";
    TS_CHECK(s.shape()[0] == first.shape()[0])
        << "PrefetchingIter: source arrays differ in rows: " << first.shape() << " and "
        << s.shape();
    s.data();  // allocates a delay-alloc source here rather than on the thread
  }
  thread_ = std::thread([this] { Loop(); });
}

BatchPrefetcher::~BatchPrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void BatchPrefetcher::Start(std::vector<int64_t> rows, int64_t batch_size, int64_t last_pad) {
  TS_CHECK(batch_size >= 1) << "PrefetchingIter: batch_size must be at least 1, got " << batch_size;
  TS_CHECK(rows.size() % static_cast<size_t>(batch_size) == 0)
      << "PrefetchingIter: " << rows.size() << " rows do not make whole batches of " << batch_size;
  TS_CHECK(last_pad >= 0 && last_pad < batch_size)
      << "PrefetchingIter: last_pad " << last_pad << " for batches of " << batch_size;
  const int64_t n = sources_.front().shape()[0];
  for (int64_t r : rows)
    TS_CHECK(r >= 0 && r < n) << "PrefetchingIter: row " << r << " is out of range for " << n
                              << " rows";
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++epoch_;
    rows_ = std::move(rows);
    batch_size_ = batch_size;
    last_pad_ = last_pad;
    next_make_ = next_take_ = 0;
    ready_.clear();
  }
  cv_.notify_all();
}

size_t BatchPrefetcher::num_batches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rows_.size() / static_cast<size_t>(batch_size_);
}

bool BatchPrefetcher::Ready() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !ready_.empty() || next_take_ * static_cast<size_t>(batch_size_) >= rows_.size();
}

std::optional<Batch> BatchPrefetcher::Take() {
  std::unique_lock<std::mutex> lock(mu_);
  if (next_take_ * static_cast<size_t>(batch_size_) >= rows_.size()) return std::nullopt;
  cv_.wait(lock, [&] { return !ready_.empty(); });
  Made made = std::move(ready_.front());
  ready_.pop_front();
  ++next_take_;
  lock.unlock();
  cv_.notify_all();  // room for the thread to make one more
  if (made.error) std::rethrow_exception(made.error);
  return std::move(made.batch);
}

void BatchPrefetcher::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] {
      return stop_ || (next_make_ * static_cast<size_t>(batch_size_) < rows_.size() &&
                       next_make_ - next_take_ < static_cast<size_t>(depth_));
    });
    if (stop_) return;
    const uint64_t epoch = epoch_;
    const size_t index = next_make_++;
    const int64_t b = batch_size_;
    const bool last = (index + 1) * static_cast<size_t>(b) == rows_.size();
    std::vector<int64_t> rows(rows_.begin() + static_cast<std::ptrdiff_t>(index * b),
                              rows_.begin() + static_cast<std::ptrdiff_t>((index + 1) * b));
    const int64_t pad = last ? last_pad_ : 0;
    lock.unlock();
    Made made;
    try {
      made.batch = Make(b, rows, pad);
    } catch (...) {
      made.error = std::current_exception();
    }
    lock.lock();
    if (epoch != epoch_) continue;  // Start came meanwhile: this batch is stale
    ready_.push_back(std::move(made));
    cv_.notify_all();
    if (on_ready_) {
      lock.unlock();
      on_ready_();
      lock.lock();
    }
  }
}

Batch BatchPrefetcher::Make(int64_t batch_size, const std::vector<int64_t>& rows, int64_t pad) {
  Batch batch;
  batch.pad = pad;
  auto shared_rows = std::make_shared<const std::vector<int64_t>>(rows);
  for (const NDArray& src : sources_) {
    Shape shape = src.shape();
    shape[0] = batch_size;
    NDArray out(shape, Context::CPU(), src.dtype());
    const TBlob from = src.data(), to = out.data();
    const size_t row_bytes = to.bytes() / static_cast<size_t>(batch_size);
    Engine::Get()->PushSync(
        [from, to, row_bytes, shared_rows, keep = src.chunk(), keep2 = out.chunk()](RunContext) {
          const auto* s = static_cast<const char*>(from.dptr_);
          auto* d = static_cast<char*>(to.dptr_);
          for (int64_t r : *shared_rows) {
            std::memcpy(d, s + static_cast<size_t>(r) * row_bytes, row_bytes);
            d += row_bytes;
          }
        },
        Context::CPU(), {src.var()}, {out.var()}, FnProperty::kCopyCPU, 0, "prefetch_batch");
    batch.arrays.push_back(std::move(out));
  }
  return batch;
}

}  // namespace tessera::io
