#include "engine/ndarray/check_numerics.h"

#include <cmath>
#include <sstream>
#include <string>

#include "engine/base/env.h"
#include "engine/base/error.h"
#include "engine/base/half.h"

namespace tessera::opcall {

std::atomic<bool> g_check_numerics{EnvBool("TESSERA_CHECK_NUMERICS", false)};

void SetCheckNumerics(bool on) {
  g_check_numerics.store(on, std::memory_order_relaxed);
}

namespace {

// The index of the first non-finite value, or -1. A first pass that the
// compiler vectorises (x - x is 0 for a finite x, NaN otherwise), then a
// search only when it found one.
template <typename T>
int64_t FirstNonFinite(const T* p, int64_t n) {
  float acc = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float x = static_cast<float>(p[i]);
    acc += x - x;
  }
  if (acc == 0) return -1;
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(static_cast<float>(p[i]))) return i;
  return -1;
}

int64_t FirstNonFinite(const double* p, int64_t n) {
  double acc = 0;
  for (int64_t i = 0; i < n; ++i) acc += p[i] - p[i];
  if (acc == 0) return -1;
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(p[i])) return i;
  return -1;
}

// -1, or the first non-finite element of a float blob (other dtypes: -1).
int64_t FirstNonFinite(const TBlob& b, double* value) {
  const int64_t n = b.Size();
  int64_t at = -1;
  switch (b.dtype()) {
    case DType::kFloat32: {
      const float* p = static_cast<const float*>(b.dptr_);
      if ((at = FirstNonFinite(p, n)) >= 0) *value = p[at];
      break;
    }
    case DType::kFloat64: {
      const double* p = static_cast<const double*>(b.dptr_);
      if ((at = FirstNonFinite(p, n)) >= 0) *value = p[at];
      break;
    }
    case DType::kFloat16: {
      const float16* p = static_cast<const float16*>(b.dptr_);
      if ((at = FirstNonFinite(p, n)) >= 0) *value = static_cast<float>(p[at]);
      break;
    }
    case DType::kBFloat16: {
      const bfloat16* p = static_cast<const bfloat16*>(b.dptr_);
      if ((at = FirstNonFinite(p, n)) >= 0) *value = static_cast<float>(p[at]);
      break;
    }
    default:
      break;
  }
  return at;
}

const char* Kind(double v) {
  return std::isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf";
}

// "sqrt (node n5)", "_backward_sqrt (node root_backward, the gradient of sqrt)".
std::string OpWords(const op::NodeAttrs& attrs) {
  const std::string name = attrs.op ? attrs.op->name() : "operator";
  std::string notes = attrs.name.empty() ? "" : "node " + attrs.name;
  constexpr std::string_view kBackward = "_backward_";
  if (name.rfind(kBackward, 0) == 0)
    notes += (notes.empty() ? "" : ", ") + ("the gradient of " + name.substr(kBackward.size()));
  return notes.empty() ? name : name + " (" + notes + ")";
}

}  // namespace

void CheckOutputs(const KernelCall& call) {
  const bool ex = static_cast<bool>(call.kernel.fstate_ex);
  const size_t n_out = ex ? call.out_arrays.size() : call.out.size();
  const auto blob = [&](bool out, size_t i) {
    if (!ex) return out ? call.out[i] : call.in[i];
    return out ? call.out_arrays[i].data() : call.in_arrays[i].data();
  };
  for (size_t o = 0; o < n_out; ++o) {
    if (o < call.req.size() && call.req[o] == kNullOp) continue;
    const TBlob b = blob(true, o);
    TS_CHECK(!b.ctx().is_gpu()) << "check_numerics: " << OpWords(*call.attrs) << " on "
                                << b.ctx().ToString()
                                << ": arrays on a GPU are not checked yet (CPU only)";
    double value = 0;
    const int64_t at = FirstNonFinite(b, &value);
    if (at < 0) continue;
    std::ostringstream msg;
    msg << "check_numerics: " << OpWords(*call.attrs) << " wrote " << Kind(value) << " to output "
        << o << " " << b.shape() << " at element " << at << "; its inputs:";
    const size_t n_in = ex ? call.in_arrays.size() : call.in.size();
    for (size_t i = 0; i < n_in; ++i) {
      const TBlob in = blob(false, i);
      double v = 0;
      msg << (i ? ", " : " ") << i << " " << in.shape() << " "
          << (in.ctx().is_gpu()             ? "on a GPU"
              : FirstNonFinite(in, &v) >= 0 ? "non-finite"
                                            : "finite");
    }
    if (n_in == 0) msg << " none";
    TS_THROW << msg.str();
  }
}

}  // namespace tessera::opcall
