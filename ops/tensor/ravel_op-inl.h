// ravel_multi_index and unravel_index: parameters, the host checks and the
// element kernels, shared by the CPU (ravel_op.cc) and GPU (ravel_op.cu)
// registrations. Every position is checked on the host first (on the GPU
// after a copy: the op waits for its stream once); the kernels then convert,
// a thread per tuple, the shape read from the kernels' integers.
#pragma once

#include <string>
#include <vector>

#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/params.h"
#include "ops/tensor/host_values.h"

namespace tessera::op {

struct RavelParam : Params<RavelParam> {
  std::vector<int64_t> shape;
  static void Declare(ParamDecl<RavelParam>& d) {
    d.field("shape", &RavelParam::shape)
        .describe(
            "The shape of the array the positions index; its first entry may be -1 (it is "
            "never used but for the range check).");
  }
};

inline const std::vector<int64_t>& DimsOf(const NodeAttrs& attrs) {
  const auto& dims = ParamsOf<RavelParam>(attrs).shape;
  TS_CHECK(!dims.empty()) << OpLabel(attrs) << ": shape is empty";
  for (size_t j = 1; j < dims.size(); ++j)
    TS_CHECK(dims[j] > 0) << OpLabel(attrs) << ": shape entry " << j << " is " << dims[j]
                          << "; only the first may be unknown (-1)";
  return dims;
}

// A position that is no whole number in [0, n) (n <= 0: unbounded) is an
// error naming the op.
inline void CheckPosition(const NodeAttrs& attrs, double v, int64_t n, const char* what,
                          int64_t i) {
  TS_CHECK(v >= 0 && v == static_cast<double>(static_cast<int64_t>(v)) && (n <= 0 || v < n))
      << OpLabel(attrs) << ": " << what << " " << i << " is " << v << ", not a whole number in [0, "
      << (n <= 0 ? std::string("inf") : std::to_string(n)) << ")";
}

template <typename T>
TS_XINLINE void AssignPosition(T& out, int64_t v, OpReqType req) {
  if (req == kAddTo)
    AssignReq<kAddTo>(out, static_cast<T>(v));
  else
    out = static_cast<T>(v);
}

// Tuple i (column i of x, (m, k)) to its flat position.
struct RavelTuple {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, const T* x, T* y, const int64_t* dims, int64_t m, int64_t k,
                             OpReqType req) {
    int64_t flat = 0;
    for (int64_t j = 0; j < m; ++j) flat = flat * dims[j] + static_cast<int64_t>(x[j * k + i]);
    AssignPosition(y[i], flat, req);
  }
};

// Flat position i to its tuple (column i of y, (m, k)); the first entry is
// what remains, so shape[0] = -1 works.
struct UnravelPosition {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, const T* x, T* y, const int64_t* dims, int64_t m, int64_t k,
                             OpReqType req) {
    int64_t rest = static_cast<int64_t>(x[i]);
    for (int64_t j = m - 1; j > 0; --j) {
      AssignPosition(y[j * k + i], rest % dims[j], req);
      rest /= dims[j];
    }
    AssignPosition(y[i], rest, req);
  }
};

template <bool kRavel, typename xpu>
void RavelCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const std::vector<int64_t>& dims = DimsOf(attrs);
  const int64_t m = int64_t(dims.size());
  const int64_t k = kRavel ? in[0].shape()[1] : in[0].Size();
  const std::vector<double> x = HostValues<xpu>(ctx.run_ctx, in[0]);
  if (kRavel) {
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < m; ++j) CheckPosition(attrs, x[j * k + i], dims[j], "position", i);
  } else {
    int64_t total = 1;  // positions past it are errors when shape[0] is known
    for (int64_t d : dims) total = d > 0 && total > 0 ? total * d : -1;
    for (int64_t i = 0; i < k; ++i) CheckPosition(attrs, x[i], total, "flat position", i);
  }
  const int64_t* dev_dims = ArrayForKernels<xpu>(ctx, dims);
  SwitchNumericDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        using Op = std::conditional_t<kRavel, RavelTuple, UnravelPosition>;
        Kernel<Op, xpu>::Launch(ctx.run_ctx, k, in[0].dptr<T>(), out[0].dptr<T>(), dev_dims, m, k,
                                req[0]);
      },
      OpLabel(attrs).c_str());
}

}  // namespace tessera::op
