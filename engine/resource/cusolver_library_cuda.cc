// Opening cuSOLVER on first use, and one handle per (device, stream).
#include "engine/resource/cusolver_library.h"

#include "engine/base/error.h"
#include "engine/resource/cuda_library.h"

namespace tessera::resource {
namespace {

template <typename Fn>
void Resolve(void* lib, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(CudaLibrarySymbol(lib, name, "cuSOLVER"));
}

CusolverApi Open() {
  void* lib = OpenCudaLibrary("cuSOLVER", "libcusolver.so.12", "TESSERA_CUSOLVER_LIBRARY");
  CusolverApi api;
  Resolve(lib, "cusolverDnCreate", &api.create);
  Resolve(lib, "cusolverDnSetStream", &api.set_stream);
  Resolve(lib, "cusolverDnSpotrf_bufferSize", &api.spotrf_buffer);
  Resolve(lib, "cusolverDnDpotrf_bufferSize", &api.dpotrf_buffer);
  Resolve(lib, "cusolverDnSpotrf", &api.spotrf);
  Resolve(lib, "cusolverDnDpotrf", &api.dpotrf);
  Resolve(lib, "cusolverDnSpotri_bufferSize", &api.spotri_buffer);
  Resolve(lib, "cusolverDnDpotri_bufferSize", &api.dpotri_buffer);
  Resolve(lib, "cusolverDnSpotri", &api.spotri);
  Resolve(lib, "cusolverDnDpotri", &api.dpotri);
  Resolve(lib, "cusolverDnSgeqrf_bufferSize", &api.sgeqrf_buffer);
  Resolve(lib, "cusolverDnDgeqrf_bufferSize", &api.dgeqrf_buffer);
  Resolve(lib, "cusolverDnSgeqrf", &api.sgeqrf);
  Resolve(lib, "cusolverDnDgeqrf", &api.dgeqrf);
  Resolve(lib, "cusolverDnSorgqr_bufferSize", &api.sorgqr_buffer);
  Resolve(lib, "cusolverDnDorgqr_bufferSize", &api.dorgqr_buffer);
  Resolve(lib, "cusolverDnSorgqr", &api.sorgqr);
  Resolve(lib, "cusolverDnDorgqr", &api.dorgqr);
  Resolve(lib, "cusolverDnSsyevd_bufferSize", &api.ssyevd_buffer);
  Resolve(lib, "cusolverDnDsyevd_bufferSize", &api.dsyevd_buffer);
  Resolve(lib, "cusolverDnSsyevd", &api.ssyevd);
  Resolve(lib, "cusolverDnDsyevd", &api.dsyevd);
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
