#include "engine/ndarray/check_numerics.h"

#include <cmath>
#include <cstdint>
#include <cstring>
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

// The index of the first non-finite value among n values whose bits are
// U words, or -1: a value is NaN or infinite when its exponent bits are all
// set. The first pass is an OR over integers, which the compiler
// vectorises (a float sum would carry a dependency from element to
// element); the search runs only when it found one.
template <typename U>
U BitsAt(const unsigned char* p, int64_t i) {
  U w;
  std::memcpy(&w, p + i * static_cast<int64_t>(sizeof(U)), sizeof(U));  // no aliasing rule broken
  return w;
}

template <typename U>
int64_t FirstNonFinite(const void* data, int64_t n, U exponent, int threads) {
  const auto* p = static_cast<const unsigned char*>(data);
  U any = 0;
  // Large outputs are scanned by the op's threads, as its kernel ran.
  threads = n >= (int64_t{1} << 16) ? threads : 1;
#ifdef _OPENMP
#pragma omp parallel for simd num_threads(threads) reduction(| : any) if (threads > 1)
#endif
  for (int64_t i = 0; i < n; ++i) any |= static_cast<U>((BitsAt<U>(p, i) & exponent) == exponent);
  if (!any) return -1;
  for (int64_t i = 0; i < n; ++i)
    if ((BitsAt<U>(p, i) & exponent) == exponent) return i;
  return -1;
}

// -1, or the first non-finite element of a float blob (other dtypes: -1).
int64_t FirstNonFinite(const TBlob& b, double* value, int threads = 1) {
  const int64_t n = b.Size();
  int64_t at = -1;
  switch (b.dtype()) {
    case DType::kFloat32:
      if ((at = FirstNonFinite<uint32_t>(b.dptr_, n, 0x7f800000u, threads)) >= 0)
        *value = static_cast<const float*>(b.dptr_)[at];
      break;
    case DType::kFloat64:
      if ((at = FirstNonFinite<uint64_t>(b.dptr_, n, 0x7ff0000000000000ull, threads)) >= 0)
        *value = static_cast<const double*>(b.dptr_)[at];
      break;
    case DType::kFloat16:
      if ((at = FirstNonFinite<uint16_t>(b.dptr_, n, 0x7c00u, threads)) >= 0)
        *value = static_cast<float>(static_cast<const float16*>(b.dptr_)[at]);
      break;
    case DType::kBFloat16:
      if ((at = FirstNonFinite<uint16_t>(b.dptr_, n, 0x7f80u, threads)) >= 0)
        *value = static_cast<float>(static_cast<const bfloat16*>(b.dptr_)[at]);
      break;
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

void CheckOutputs(const KernelCall& call, int threads) {
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
    const int64_t at = FirstNonFinite(b, &value, threads);
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
