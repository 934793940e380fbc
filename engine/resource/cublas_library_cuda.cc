// Opening cuBLAS on first use, and one handle per (device, stream).
#include "engine/resource/cublas_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "engine/base/cuda_utils.h"
#include "engine/base/error.h"

namespace tessera::resource {
namespace {

template <typename Fn>
void Resolve(void* lib, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(lib, name));
  TS_CHECK(*fn) << "the cuBLAS opened has no " << name;
}

CublasApi Open() {
  const char* chosen = std::getenv("TESSERA_CUBLAS_LIBRARY");
  const char* path = chosen && *chosen ? chosen : "libcublas.so.13";
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    TS_THROW << "cannot open cuBLAS (" << (why ? why : path)
             << "); put the CUDA libraries on LD_LIBRARY_PATH or set TESSERA_CUBLAS_LIBRARY";
  }
  CublasApi api;
  Resolve(lib, "cublasCreate_v2", &api.create);
  Resolve(lib, "cublasSetStream_v2", &api.set_stream);
  Resolve(lib, "cublasSetMathMode", &api.set_math_mode);
  Resolve(lib, "cublasGemmStridedBatchedEx_64", &api.gemm_strided_batched_ex);
  Resolve(lib, "cublasStrsm_v2_64", &api.strsm);
  Resolve(lib, "cublasDtrsm_v2_64", &api.dtrsm);
  Resolve(lib, "cublasSgetrfBatched", &api.sgetrf_batched);
  Resolve(lib, "cublasDgetrfBatched", &api.dgetrf_batched);
  Resolve(lib, "cublasSgetriBatched", &api.sgetri_batched);
  Resolve(lib, "cublasDgetriBatched", &api.dgetri_batched);
  Resolve(lib, "cublasGetStatusString", &api.status_string);
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
  static std::mutex mu;
  static std::map<std::pair<int, cudaStream_t>, cublasHandle_t> handles;
  int device = 0;
  TS_CUDA_CALL(cudaGetDevice(&device));
  const CublasApi& api = Cublas();
  std::lock_guard<std::mutex> lock(mu);
  auto [it, fresh] = handles.try_emplace({device, stream}, nullptr);
  if (!fresh) return it->second;
  cublasHandle_t h = nullptr;
  cublasStatus_t st = api.create(&h);
  if (st == CUBLAS_STATUS_SUCCESS) st = api.set_stream(h, stream);
  // Float32 stays float32-exact unless TF32 is allowed; the explicit
  // compute types of each call choose tensor cores for half types.
  if (st == CUBLAS_STATUS_SUCCESS)
    st = api.set_math_mode(
        h, CublasAllowTensorCores() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
  if (st != CUBLAS_STATUS_SUCCESS) {
    handles.erase(it);
    TS_THROW << "cuBLAS: cannot make a handle for gpu(" << device << "): " << api.status_string(st);
  }
  return it->second = h;
}

}  // namespace tessera::resource
