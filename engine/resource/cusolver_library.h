// cuSOLVER (its dense routines) for GPU ops, opened on first use as cuBLAS
// is (cublas_library.h): only a process that factors matrices on a GPU maps
// it. One handle per (device, stream), bound to that stream, kept for the
// process's life. Include only from files built with CUDA.
//
//   TESSERA_CUSOLVER_LIBRARY=path  the library to open (default libcusolver.so.12)
#pragma once

#include <cuda_runtime.h>
#include <cusolverDn.h>

#include "engine/base/shared_library.h"

namespace tessera::resource {

// The entry points Tessera calls, X(member, symbol) for each, resolved from
// the opened library.
#define TS_CUSOLVER_FUNCTIONS(X)                \
  X(create, cusolverDnCreate)                   \
  X(set_stream, cusolverDnSetStream)            \
  X(spotrf_buffer, cusolverDnSpotrf_bufferSize) \
  X(dpotrf_buffer, cusolverDnDpotrf_bufferSize) \
  X(spotrf, cusolverDnSpotrf)                   \
  X(dpotrf, cusolverDnDpotrf)                   \
  X(spotri_buffer, cusolverDnSpotri_bufferSize) \
  X(dpotri_buffer, cusolverDnDpotri_bufferSize) \
  X(spotri, cusolverDnSpotri)                   \
  X(dpotri, cusolverDnDpotri)                   \
  X(sgeqrf_buffer, cusolverDnSgeqrf_bufferSize) \
  X(dgeqrf_buffer, cusolverDnDgeqrf_bufferSize) \
  X(sgeqrf, cusolverDnSgeqrf)                   \
  X(dgeqrf, cusolverDnDgeqrf)                   \
  X(sorgqr_buffer, cusolverDnSorgqr_bufferSize) \
  X(dorgqr_buffer, cusolverDnDorgqr_bufferSize) \
  X(sorgqr, cusolverDnSorgqr)                   \
  X(dorgqr, cusolverDnDorgqr)                   \
  X(ssyevd_buffer, cusolverDnSsyevd_bufferSize) \
  X(dsyevd_buffer, cusolverDnDsyevd_bufferSize) \
  X(ssyevd, cusolverDnSsyevd)                   \
  X(dsyevd, cusolverDnDsyevd)

struct CusolverApi {
  TS_LIBRARY_FUNCTIONS(TS_CUSOLVER_FUNCTIONS)
};

// The library, opened once; throws tessera::Error naming what was tried
// when it cannot be opened (a later call tries again).
const CusolverApi& Cusolver();

// The handle for `stream` on the current device, bound to it.
cusolverDnHandle_t CusolverHandle(cudaStream_t stream);

}  // namespace tessera::resource
