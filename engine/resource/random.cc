#include "engine/resource/random.h"

#include <algorithm>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace tessera::resource {
namespace {

// Runs fn(b) for every Philox block b in [0, num_blocks), in chunks big
// enough that handing one to a thread costs little next to computing it.
template <typename Fn>
void ForEachBlock(uint64_t num_blocks, int num_threads, const Fn& fn) {
  constexpr uint64_t kBlocksPerChunk = 4096;
  const int64_t chunks = static_cast<int64_t>((num_blocks + kBlocksPerChunk - 1) / kBlocksPerChunk);
#ifdef _OPENMP
  const int threads = num_threads > 0 ? num_threads : omp_get_max_threads();
#pragma omp parallel for num_threads(threads) schedule(static) if (chunks > 1)
#else
  (void)num_threads;
#endif
  for (int64_t c = 0; c < chunks; ++c) {
    const uint64_t begin = static_cast<uint64_t>(c) * kBlocksPerChunk;
    const uint64_t end = std::min(begin + kBlocksPerChunk, num_blocks);
    for (uint64_t b = begin; b < end; ++b) fn(b);
  }
}

}  // namespace

void FillRandomBits(const RandomStream& stream, uint32_t* out, size_t n, int num_threads) {
  ForEachBlock(NumRandomBlocks(n, 4), num_threads,
               [&](uint64_t b) { WriteBitsBlock(stream, b, out, n); });
}

void FillUniform(const RandomStream& stream, float* out, size_t n, float lo, float hi,
                 int num_threads) {
  const float scale = hi - lo;
  ForEachBlock(NumRandomBlocks(n, 4), num_threads,
               [&](uint64_t b) { WriteUniformBlock(stream, b, out, n, lo, scale); });
}

void FillUniform(const RandomStream& stream, double* out, size_t n, double lo, double hi,
                 int num_threads) {
  const double scale = hi - lo;
  ForEachBlock(NumRandomBlocks(n, 2), num_threads,
               [&](uint64_t b) { WriteUniformBlock(stream, b, out, n, lo, scale); });
}

void FillNormal(const RandomStream& stream, float* out, size_t n, float mean, float stddev,
                int num_threads) {
  ForEachBlock(NumRandomBlocks(n, 4), num_threads,
               [&](uint64_t b) { WriteNormalBlock(stream, b, out, n, mean, stddev); });
}

void FillNormal(const RandomStream& stream, double* out, size_t n, double mean, double stddev,
                int num_threads) {
  ForEachBlock(NumRandomBlocks(n, 2), num_threads,
               [&](uint64_t b) { WriteNormalBlock(stream, b, out, n, mean, stddev); });
}

}  // namespace tessera::resource
