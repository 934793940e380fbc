// Opening cuSOLVER on first use, and one handle per (device, stream).
#include "engine/resource/cusolver_library.h"

#include "engine/base/error.h"
#include "engine/resource/cuda_library.h"

namespace tessera::resource {
namespace {

CusolverApi Open() {
  CusolverApi api;
  api.Bind(OpenCudaLibrary("cuSOLVER", "libcusolver.so.12", "TESSERA_CUSOLVER_LIBRARY"),
           "the cuSOLVER opened");
  return api;
}

}  // namespace

const CusolverApi& Cusolver() {
  // A throwing initialiser leaves the static unset: the next call tries again.
  static const CusolverApi api = Open();
  return api;
}

cusolverDnHandle_t CusolverHandle(cudaStream_t stream) {
  static StreamHandles<cusolverDnHandle_t> handles;
  return handles.Get(stream, [](cudaStream_t s, int device) {
    const CusolverApi& api = Cusolver();
    cusolverDnHandle_t h = nullptr;
    cusolverStatus_t st = api.create(&h);
    if (st == CUSOLVER_STATUS_SUCCESS) st = api.set_stream(h, s);
    if (st != CUSOLVER_STATUS_SUCCESS)
      TS_THROW << "cuSOLVER: cannot make a handle for gpu(" << device << ") (status " << int(st)
               << ")";
    return h;
  });
}

}  // namespace tessera::resource
