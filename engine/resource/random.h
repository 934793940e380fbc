// CPU random fills. Element i of a fill depends only on (stream, i) (see
// random_stream.h), so the output is the same for any number of threads, and
// the GPU fills (random_gpu.h) give the same bits.
//
// num_threads: OpenMP threads to use; 0 takes OpenMP's current default
// (which the engine sets per worker). Builds without OpenMP run serially.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/resource/random_stream.h"

namespace tessera::resource {

void FillRandomBits(const RandomStream& stream, uint32_t* out, size_t n, int num_threads = 0);
// Uniform on [lo, hi): lo + u * (hi - lo) with u in [0, 1) (for floats, on a grid
// of 2^-24; rounding of that sum can reach hi when |lo| is much larger than hi - lo).
void FillUniform(const RandomStream& stream, float* out, size_t n, float lo, float hi,
                 int num_threads = 0);
void FillUniform(const RandomStream& stream, double* out, size_t n, double lo, double hi,
                 int num_threads = 0);
// Normal with the given mean and standard deviation.
void FillNormal(const RandomStream& stream, float* out, size_t n, float mean, float stddev,
                int num_threads = 0);
void FillNormal(const RandomStream& stream, double* out, size_t n, double mean, double stddev,
                int num_threads = 0);

}  // namespace tessera::resource
