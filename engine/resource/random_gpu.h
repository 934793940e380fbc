// GPU random fills, the twins of random.h's CPU fills: the same (stream,
// element) -> value mapping, so random bits are identical to the CPU's and
// floats agree up to the device's log/sin/cos rounding (uniforms exactly).
//
// Defined only in CUDA builds (random_gpu.cu); guard calls with
// TESSERA_WITH_CUDA. `out` is device memory on the current device;
// `cuda_stream` is the op's cudaStream_t (RunContext::stream). The fill is
// enqueued, not finished, when the call returns.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/resource/random_stream.h"

namespace tessera::resource {

void FillRandomBitsGpu(const RandomStream& stream, uint32_t* out, size_t n, void* cuda_stream);
void FillUniformGpu(const RandomStream& stream, float* out, size_t n, float lo, float hi,
                    void* cuda_stream);
void FillUniformGpu(const RandomStream& stream, double* out, size_t n, double lo, double hi,
                    void* cuda_stream);
void FillNormalGpu(const RandomStream& stream, float* out, size_t n, float mean, float stddev,
                   void* cuda_stream);
void FillNormalGpu(const RandomStream& stream, double* out, size_t n, double mean, double stddev,
                   void* cuda_stream);

}  // namespace tessera::resource
