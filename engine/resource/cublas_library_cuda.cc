// Opening cuBLAS on first use, and one handle per (device, stream).
#include "engine/resource/cublas_library.h"

#include <cstdlib>
#include <string>

#include "engine/base/error.h"
#include "engine/resource/cuda_library.h"

namespace tessera::resource {
namespace {

CublasApi Open() {
  CublasApi api;
  api.Bind(OpenCudaLibrary("cuBLAS", "libcublas.so.13", "TESSERA_CUBLAS_LIBRARY"),
           "the cuBLAS opened");
  return api;
}

}  // namespace

const CublasApi& Cublas() {
  // A throwing initialiser leaves the static unset: the next call tries again.
  static const CublasApi api = Open();
  return api;
}

bool CublasAllowTensorCores() {
  static const bool allow = [] {
    const char* v = std::getenv("TESSERA_CUDA_ALLOW_TENSOR_CORE");
    return v && std::string(v) == "1";
  }();
  return allow;
}

cublasHandle_t CublasHandle(cudaStream_t stream) {
  static StreamHandles<cublasHandle_t> handles;
  return handles.Get(stream, [](cudaStream_t s, int device) {
    const CublasApi& api = Cublas();
    cublasHandle_t h = nullptr;
    cublasStatus_t st = api.create(&h);
    if (st == CUBLAS_STATUS_SUCCESS) st = api.set_stream(h, s);
    // Float32 stays float32-exact unless TF32 is allowed; the explicit
    // compute types of each call choose tensor cores for half types.
    if (st == CUBLAS_STATUS_SUCCESS)
      st = api.set_math_mode(
          h, CublasAllowTensorCores() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
    if (st != CUBLAS_STATUS_SUCCESS)
      TS_THROW << "cuBLAS: cannot make a handle for gpu(" << device
               << "): " << api.status_string(st);
    return h;
  });
}

}  // namespace tessera::resource
