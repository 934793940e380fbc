// CUDA kernels compiled at run time (MXNet's mx.rtc): CUDA C source compiled
// by NVRTC into PTX when the module is made, loaded into a device by the
// driver on the first launch there, and launched as an engine op on the
// arrays' GPU stream, ordered by the arrays it reads and writes.
//
//   RtcModule mod(source, {"--use_fast_math"}, {});        // throws with NVRTC's log
//   RtcKernel k = mod.GetKernel("axpy", "const float* x, float* y, float a, int n");
//   k.Launch({x, y, 2.0, n}, gpu(0), {blocks, 1, 1}, {256, 1, 1}, 0);
//
// NVRTC (libnvrtc) and the driver (libcuda) are opened on first use, so the
// compiling half works in any build that finds the CUDA toolkit at run time
// (TESSERA_NVRTC_LIBRARY names the library); launching needs a GPU context.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "engine/base/context.h"
#include "engine/base/dtype.h"
#include "engine/ndarray/ndarray.h"

namespace tessera::op {

// One parameter of a kernel's signature: a pointer to `dtype` (const when the
// kernel only reads it) or a scalar of `dtype`.
struct RtcParam {
  DType dtype = DType::kFloat32;
  bool pointer = false;
  bool is_const = false;
  std::string name;
};

// Parses a C parameter list ("const float* x, float *y, int n"): types
// float, double, half (__half), int, int32_t, int64_t, long long, unsigned
// char, uint8_t, int8_t, char, bool; at most one '*'. Throws naming the
// parameter it cannot read.
std::vector<RtcParam> ParseRtcSignature(const std::string& signature);

class RtcKernel;

class RtcModule {
 public:
  // Compiles `source` with NVRTC and `options`; `exports` are C++ names
  // (templates, namespaces) to look up by those names in GetKernel.
  RtcModule(const std::string& source, const std::vector<std::string>& options,
            const std::vector<std::string>& exports);
  ~RtcModule();
  RtcModule(const RtcModule&) = delete;
  RtcModule& operator=(const RtcModule&) = delete;

  const std::string& ptx() const;
  // A kernel of this module by its name (an exported name, or an
  // extern "C" kernel's), with its parameters.
  RtcKernel GetKernel(const std::string& name, const std::string& signature) const;

  struct State;  // PTX, lowered names, per-device modules (rtc.cc)

 private:
  std::shared_ptr<State> state_;
};

// A launch argument: an array for a pointer parameter, a number for a scalar.
using RtcArg = std::variant<NDArray, double>;

class RtcKernel {
 public:
  const std::string& name() const { return name_; }
  const std::vector<RtcParam>& params() const { return params_; }
  // Pushes the launch on `ctx`'s compute lane: arrays passed to const
  // pointers are read, the others written. Checks every argument against
  // the signature first (count, array or number, dtype, device) and throws
  // naming the argument.
  void Launch(const std::vector<RtcArg>& args, Context ctx, std::array<unsigned, 3> grid,
              std::array<unsigned, 3> block, unsigned shared_mem) const;

 private:
  friend class RtcModule;
  RtcKernel(std::shared_ptr<RtcModule::State> module, std::string name, std::string lowered,
            std::vector<RtcParam> params)
      : module_(std::move(module)),
        name_(std::move(name)),
        lowered_(std::move(lowered)),
        params_(std::move(params)) {}
  std::shared_ptr<RtcModule::State> module_;
  std::string name_, lowered_;
  std::vector<RtcParam> params_;
};

}  // namespace tessera::op
