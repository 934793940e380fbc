// Makes the batches of an epoch on a background thread, ahead of the
// consumer. A batch is a list of rows of the source arrays' first axis; the
// thread makes the batch's arrays and pushes the row copies to the engine
// (reading the sources, writing the new arrays), so the copies run on the
// engine's workers, ordered with everything else that touches those arrays,
// and a failed source poisons its batch like any op's output. The thread
// stays at most `depth` batches ahead of Take.
//
//   BatchPrefetcher p({images, labels}, /*depth=*/2);
//   p.Start(rows, /*batch_size=*/64, /*last_pad=*/0);   // one epoch
//   while (auto batch = p.Take()) train(batch->arrays);
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "engine/ndarray/ndarray.h"

namespace tessera::io {

struct Batch {
  std::vector<NDArray> arrays;  // one per source: (batch_size, the source's other axes)
  int64_t pad = 0;              // rows at the end that are filler
};

class BatchPrefetcher {
 public:
  // `sources`: host arrays with one first-axis length. `on_ready` is called
  // from the background thread whenever Ready() may have become true.
  BatchPrefetcher(std::vector<NDArray> sources, int depth, std::function<void()> on_ready = {});
  ~BatchPrefetcher();  // stops and joins the thread; pushed copies carry on
  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;

  // Starts an epoch, dropping what is left of the last one: `rows` holds
  // batch_size rows per batch; the last batch's final `last_pad` rows are
  // filler. An error (nothing changes) for rows out of range.
  void Start(std::vector<int64_t> rows, int64_t batch_size, int64_t last_pad);
  // True when Take would not block.
  bool Ready() const;
  // The next batch, waiting for it to be made; nullopt at the end of the
  // epoch. Rethrows an error the thread met making it.
  std::optional<Batch> Take();

  size_t num_batches() const;
  int depth() const { return depth_; }

 private:
  struct Made {
    Batch batch;
    std::exception_ptr error;
  };
  void Loop();
  Batch Make(int64_t batch_size, const std::vector<int64_t>& rows, int64_t pad);

  const std::vector<NDArray> sources_;
  const int depth_;
  const std::function<void()> on_ready_;

  mutable std::mutex mu_;
  std::condition_variable cv_;  // the thread waits for room or an epoch; Take for a batch
  uint64_t epoch_ = 0;          // bumped by Start: a batch of an older epoch is dropped
  std::vector<int64_t> rows_;
  int64_t batch_size_ = 1;
  int64_t last_pad_ = 0;
  size_t next_make_ = 0;  // the next batch the thread makes
  size_t next_take_ = 0;  // the next batch Take returns
  std::deque<Made> ready_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tessera::io
