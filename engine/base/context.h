// Context says where data lives and an op runs: cpu(i), gpu(i), cpu_pinned(i).
// RunContext adds what only the engine knows when the op starts: its stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace tessera {

// Values follow MXNet's DeviceType so serialized contexts stay compatible.
enum class DeviceType : int32_t { kCPU = 1, kGPU = 2, kCPUPinned = 3 };

struct Context {
  DeviceType dev_type = DeviceType::kCPU;
  int32_t dev_id = 0;

  static constexpr Context CPU(int id = 0) { return {DeviceType::kCPU, id}; }
  static constexpr Context GPU(int id = 0) { return {DeviceType::kGPU, id}; }
  static constexpr Context CPUPinned(int id = 0) { return {DeviceType::kCPUPinned, id}; }

  bool is_gpu() const { return dev_type == DeviceType::kGPU; }
  // Pinned host memory is CPU memory for computing purposes.
  bool is_cpu() const { return dev_type != DeviceType::kGPU; }

  friend bool operator==(const Context&, const Context&) = default;
  friend bool operator<(const Context& a, const Context& b) {
    return a.dev_type != b.dev_type ? a.dev_type < b.dev_type : a.dev_id < b.dev_id;
  }
  std::string ToString() const;  // "cpu(0)", "gpu(1)", "cpu_pinned(0)"
  // Reads ToString's spelling back ("gpu" alone is gpu(0)); an error names the text.
  static Context Parse(std::string_view text);
};

// Number of CUDA devices usable by this process: 0 in a build without CUDA or
// on a machine without a GPU. Cheap after the first call.
int NumGPUs();
bool BuiltWithCUDA();

// What a running op is given besides its data: where it runs, its stream,
// and how many OpenMP threads a CPU kernel may use (the engine's share of the
// cores per worker, so that workers x threads never oversubscribes them).
struct RunContext {
  Context ctx;
  void* stream = nullptr;  // cudaStream_t for GPU ops, null on CPU
  int omp_threads = 1;
  template <typename T>
  T get_stream() const {
    return static_cast<T>(stream);
  }
};

}  // namespace tessera

template <>
struct std::hash<tessera::Context> {
  size_t operator()(const tessera::Context& c) const noexcept {
    return std::hash<int64_t>()((int64_t(c.dev_type) << 32) | uint32_t(c.dev_id));
  }
};
