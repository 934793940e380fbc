// cuSOLVER (its dense routines) for GPU ops, opened on first use as cuBLAS
// is (cublas_library.h): only a process that factors matrices on a GPU maps
// it. One handle per (device, stream), bound to that stream, kept for the
// process's life. Include only from files built with CUDA.
//
//   TESSERA_CUSOLVER_LIBRARY=path  the library to open (default libcusolver.so.12)
#pragma once

#include <cuda_runtime.h>
#include <cusolverDn.h>

namespace tessera::resource {

// The entry points Tessera calls, resolved from the opened library.
struct CusolverApi {
  decltype(&cusolverDnCreate) create = nullptr;
  decltype(&cusolverDnSetStream) set_stream = nullptr;
  decltype(&cusolverDnSpotrf_bufferSize) spotrf_buffer = nullptr;
  decltype(&cusolverDnDpotrf_bufferSize) dpotrf_buffer = nullptr;
  decltype(&cusolverDnSpotrf) spotrf = nullptr;
  decltype(&cusolverDnDpotrf) dpotrf = nullptr;
  decltype(&cusolverDnSpotri_bufferSize) spotri_buffer = nullptr;
  decltype(&cusolverDnDpotri_bufferSize) dpotri_buffer = nullptr;
  decltype(&cusolverDnSpotri) spotri = nullptr;
  decltype(&cusolverDnDpotri) dpotri = nullptr;
  decltype(&cusolverDnSgeqrf_bufferSize) sgeqrf_buffer = nullptr;
  decltype(&cusolverDnDgeqrf_bufferSize) dgeqrf_buffer = nullptr;
  decltype(&cusolverDnSgeqrf) sgeqrf = nullptr;
  decltype(&cusolverDnDgeqrf) dgeqrf = nullptr;
  decltype(&cusolverDnSorgqr_bufferSize) sorgqr_buffer = nullptr;
  decltype(&cusolverDnDorgqr_bufferSize) dorgqr_buffer = nullptr;
  decltype(&cusolverDnSorgqr) sorgqr = nullptr;
  decltype(&cusolverDnDorgqr) dorgqr = nullptr;
  decltype(&cusolverDnSsyevd_bufferSize) ssyevd_buffer = nullptr;
  decltype(&cusolverDnDsyevd_bufferSize) dsyevd_buffer = nullptr;
  decltype(&cusolverDnSsyevd) ssyevd = nullptr;
  decltype(&cusolverDnDsyevd) dsyevd = nullptr;
};

// The library, opened once; throws tessera::Error naming what was tried
// when it cannot be opened (a later call tries again).
const CusolverApi& Cusolver();

// The handle for `stream` on the current device, bound to it.
cusolverDnHandle_t CusolverHandle(cudaStream_t stream);

}  // namespace tessera::resource
