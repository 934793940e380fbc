// A bounded multi-producer multi-consumer FIFO of ready ops without a lock:
// each cell carries a sequence number that says whose turn it is (the scheme
// of Dmitry Vyukov's bounded MPMC queue). Pushing and popping touch the
// cell's cache line and one position counter, instead of a mutex, a deque and
// a length counter, which matters when one thread pushes and another pops
// every few hundred nanoseconds.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace tessera::engine {

struct OprBlock;

class ReadyRing {
 public:
  explicit ReadyRing(size_t capacity_pow2 = 4096)
      : mask_(capacity_pow2 - 1), cells_(new Cell[capacity_pow2]) {
    for (size_t i = 0; i < capacity_pow2; ++i) cells_[i].seq.store(i, std::memory_order_relaxed);
  }

  // False when full.
  bool Push(OprBlock* blk) {
    size_t pos = tail_.load(std::memory_order_relaxed);
    Cell* cell;
    for (;;) {
      cell = &cells_[pos & mask_];
      size_t seq = cell->seq.load(std::memory_order_acquire);
      intptr_t diff = intptr_t(seq) - intptr_t(pos);
      if (diff == 0) {
        if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
      } else if (diff < 0) {
        return false;
      } else {
        pos = tail_.load(std::memory_order_relaxed);
      }
    }
    // Release on the op itself too: Steal claims it through `blk` alone, and
    // must see everything that happened before the op was made ready.
    cell->blk.store(blk, std::memory_order_release);
    cell->seq.store(pos + 1, std::memory_order_release);
    return true;
  }

  // The oldest op, or null when empty. Cells emptied by Steal are skipped.
  OprBlock* Pop() {
    for (;;) {
      size_t pos = head_.load(std::memory_order_relaxed);
      Cell* cell;
      for (;;) {
        cell = &cells_[pos & mask_];
        size_t seq = cell->seq.load(std::memory_order_acquire);
        intptr_t diff = intptr_t(seq) - intptr_t(pos + 1);
        if (diff == 0) {
          if (head_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
        } else if (diff < 0) {
          return nullptr;
        } else {
          pos = head_.load(std::memory_order_relaxed);
        }
      }
      OprBlock* blk = cell->blk.exchange(nullptr, std::memory_order_acq_rel);
      cell->seq.store(pos + mask_ + 1, std::memory_order_release);
      if (blk) return blk;
    }
  }

  // Takes `blk` out if it waits among the newest `window` cells; the cell
  // stays, empty, and Pop skips it. Exactly one of Pop and Steal gets an op.
  bool Steal(OprBlock* blk, size_t window = 8) {
    size_t tail = tail_.load(std::memory_order_acquire);
    size_t head = head_.load(std::memory_order_acquire);
    for (size_t pos = tail; pos != head && tail - pos < window; --pos) {
      Cell& cell = cells_[(pos - 1) & mask_];
      OprBlock* expected = blk;
      if (cell.blk.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel))
        return true;
    }
    return false;
  }

  // Approximate: exact when no push or pop is in progress.
  int64_t Size() const {
    return int64_t(tail_.load(std::memory_order_acquire)) -
           int64_t(head_.load(std::memory_order_acquire));
  }
  bool Empty() const { return Size() <= 0; }

 private:
  struct alignas(64) Cell {  // one per cache line: neighbours do not contend
    std::atomic<size_t> seq;
    std::atomic<OprBlock*> blk{nullptr};
  };
  const size_t mask_;
  std::unique_ptr<Cell[]> cells_;
  alignas(64) std::atomic<size_t> tail_{0};  // next position to push
  alignas(64) std::atomic<size_t> head_{0};  // next position to pop
};

}  // namespace tessera::engine
