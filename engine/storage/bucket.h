// Size classes for the pooled allocators. A freed block can serve any later
// request of its class, so requests are rounded up to a small set of sizes:
// multiples of 64 bytes up to 1 KiB, then four geometric steps per power of
// two (1.25x, 1.5x, 1.75x, 2x), which bounds the rounding waste below 25%
// while keeping the number of classes (and free lists) small.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace tessera::storage {

inline constexpr size_t kAlignment = 64;      // CPU blocks; a cache line, AVX-512 friendly
inline constexpr size_t kLinearLimit = 1024;  // classes below this are 64 bytes apart
inline constexpr int kNumLinearBuckets = 16;  // 64, 128, ..., 1024
inline constexpr int kLinearLimitLog2 = 10;   // log2(kLinearLimit)
inline constexpr int kStepsPerPowerOfTwo = 4;
// Covers every size up to 2^63; Storage rejects anything near that long before.
inline constexpr int kNumBuckets =
    kNumLinearBuckets + (63 - kLinearLimitLog2) * kStepsPerPowerOfTwo;

constexpr size_t RoundUpTo(size_t bytes, size_t multiple) {
  return (bytes + multiple - 1) / multiple * multiple;
}

// The size class of a request of `bytes` (> 0, <= 2^62).
constexpr int BucketIndex(size_t bytes) {
  if (bytes <= kLinearLimit) return static_cast<int>((bytes + kAlignment - 1) / kAlignment) - 1;
  // bytes lies in (2^k, 2^(k+1)]; the class is the smallest 2^k * (1 + j/4) >= bytes.
  const int k = std::bit_width(bytes - 1) - 1;
  const size_t step = size_t{1} << (k - 2);
  const size_t j = (bytes - (size_t{1} << k) + step - 1) / step;  // 1..4
  return kNumLinearBuckets + (k - kLinearLimitLog2) * kStepsPerPowerOfTwo + static_cast<int>(j) - 1;
}

// The number of bytes a block of class `index` holds.
constexpr size_t BucketBytes(int index) {
  if (index < kNumLinearBuckets) return static_cast<size_t>(index + 1) * kAlignment;
  const int g = index - kNumLinearBuckets;
  const int k = kLinearLimitLog2 + g / kStepsPerPowerOfTwo;
  const size_t j = static_cast<size_t>(g % kStepsPerPowerOfTwo) + 1;
  return (size_t{1} << k) + j * (size_t{1} << (k - 2));
}

constexpr size_t RoundUpBucket(size_t bytes) {
  return BucketBytes(BucketIndex(bytes));
}

}  // namespace tessera::storage
