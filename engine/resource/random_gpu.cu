#include <algorithm>

#include "engine/base/cuda_utils.h"
#include "engine/resource/random_gpu.h"

namespace tessera::resource {
namespace {

// One thread per Philox block, grid-striding so any n fits a bounded grid.
template <typename Writer>
__global__ void ForEachBlockKernel(uint64_t num_blocks, Writer writer) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t b = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; b < num_blocks;
       b += stride) {
    writer(b);
  }
}

template <typename Writer>
void Launch(uint64_t num_blocks, const Writer& writer, void* cuda_stream) {
  if (num_blocks == 0) return;
  constexpr unsigned kThreads = 256;
  constexpr uint64_t kMaxGrid = 4096;  // enough to fill any current GPU
  const unsigned grid =
      static_cast<unsigned>(std::min<uint64_t>((num_blocks + kThreads - 1) / kThreads, kMaxGrid));
  ForEachBlockKernel<<<grid, kThreads, 0, static_cast<cudaStream_t>(cuda_stream)>>>(num_blocks,
                                                                                    writer);
  TS_CUDA_CALL(cudaGetLastError());
}

struct BitsWriter {
  RandomStream s;
  uint32_t* out;
  uint64_t n;
  __device__ void operator()(uint64_t b) const { WriteBitsBlock(s, b, out, n); }
};

template <typename T>
struct UniformWriter {
  RandomStream s;
  T* out;
  uint64_t n;
  T lo, scale;
  __device__ void operator()(uint64_t b) const { WriteUniformBlock(s, b, out, n, lo, scale); }
};

template <typename T>
struct NormalWriter {
  RandomStream s;
  T* out;
  uint64_t n;
  T mean, stddev;
  __device__ void operator()(uint64_t b) const { WriteNormalBlock(s, b, out, n, mean, stddev); }
};

}  // namespace

void FillRandomBitsGpu(const RandomStream& stream, uint32_t* out, size_t n, void* cuda_stream) {
  Launch(NumRandomBlocks(n, 4), BitsWriter{stream, out, n}, cuda_stream);
}

void FillUniformGpu(const RandomStream& stream, float* out, size_t n, float lo, float hi,
                    void* cuda_stream) {
  Launch(NumRandomBlocks(n, 4), UniformWriter<float>{stream, out, n, lo, hi - lo}, cuda_stream);
}

void FillUniformGpu(const RandomStream& stream, double* out, size_t n, double lo, double hi,
                    void* cuda_stream) {
  Launch(NumRandomBlocks(n, 2), UniformWriter<double>{stream, out, n, lo, hi - lo}, cuda_stream);
}

void FillNormalGpu(const RandomStream& stream, float* out, size_t n, float mean, float stddev,
                   void* cuda_stream) {
  Launch(NumRandomBlocks(n, 4), NormalWriter<float>{stream, out, n, mean, stddev}, cuda_stream);
}

void FillNormalGpu(const RandomStream& stream, double* out, size_t n, double mean, double stddev,
                   void* cuda_stream) {
  Launch(NumRandomBlocks(n, 2), NormalWriter<double>{stream, out, n, mean, stddev}, cuda_stream);
}

}  // namespace tessera::resource
