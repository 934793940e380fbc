// The table of a pool's live blocks: block address -> its sizes. Open
// addressing with linear probing and backward-shift deletion, so a lookup
// reads one or two cache lines and inserting or erasing allocates nothing
// until the table grows. (An unordered_map's node per block cost more than
// the rest of a pool hit on the small arrays of scalar code.) Not
// thread-safe: the pool's mutex guards it.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::storage {

class LiveTable {
 public:
  struct Block {
    size_t requested;  // what Alloc was asked for, to check Free's size
    size_t reserved;   // what the system gave
  };

  // The entry of `ptr`, or nullptr; valid until the next Insert or Erase.
  Block* Find(const void* ptr) {
    if (slots_.empty()) return nullptr;
    for (size_t i = Home(ptr);; i = (i + 1) & mask_) {
      if (slots_[i].key == ptr) return &slots_[i].block;
      if (!slots_[i].key) return nullptr;
    }
  }

  // `ptr` (not null) must not be present. Throws only bad_alloc, before any
  // change.
  void Insert(void* ptr, Block block) {
    if ((count_ + 1) * 2 > slots_.size()) Grow();
    size_t i = Home(ptr);
    while (slots_[i].key) i = (i + 1) & mask_;
    slots_[i] = Slot{ptr, block};
    ++count_;
  }

  // Removes the entry Find returned.
  void Erase(Block* entry) {
    size_t i = static_cast<size_t>(
        reinterpret_cast<Slot*>(reinterpret_cast<char*>(entry) - offsetof(Slot, block)) -
        slots_.data());
    // Later entries of the probe run move back into the hole unless their
    // home lies cyclically after it (then the hole does not break their run).
    for (size_t j = (i + 1) & mask_; slots_[j].key; j = (j + 1) & mask_) {
      const size_t home = Home(slots_[j].key);
      const bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
      if (stays) continue;
      slots_[i] = slots_[j];
      i = j;
    }
    slots_[i].key = nullptr;
    --count_;
  }

  size_t size() const { return count_; }

 private:
  struct Slot {
    void* key = nullptr;
    Block block{};
  };

  // Fibonacci hashing of the address above its alignment bits.
  size_t Home(const void* p) const {
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(p) >> 6) * 0x9E3779B97F4A7C15ull >>
                               shift_);
  }

  void Grow() {
    const size_t n = slots_.empty() ? 64 : slots_.size() * 2;
    std::vector<Slot> old(n);
    old.swap(slots_);
    mask_ = n - 1;
    shift_ = 64 - std::countr_zero(n);
    count_ = 0;
    for (const Slot& s : old)
      if (s.key) Insert(s.key, s.block);
  }

  std::vector<Slot> slots_;
  size_t count_ = 0;
  size_t mask_ = 0;
  int shift_ = 64;
};

}  // namespace tessera::storage
