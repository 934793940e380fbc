// cuBLAS for GPU ops, opened on first use: the library (with cublasLt, some
// 600 MB) is only mapped by a process that multiplies matrices on a GPU, so
// the shell starts as fast in a CUDA build as without one. One handle per
// (device, stream), bound to that stream, made the first time an op on that
// stream asks and kept for the process's life (as MXNet keeps one per
// stream): handles are not thread-safe, and a stream is served by one
// engine worker at a time. Include only from files built with CUDA.
//
//   TESSERA_CUDA_ALLOW_TENSOR_CORE=1  lets float32 products run on tensor
//       cores in TF32 (10-bit mantissas: faster, not float32-exact); off by
//       default. float16 and bfloat16 always use tensor cores, summing in
//       float32. (MXNet's switch is MXNET_CUDA_ALLOW_TENSOR_CORE.)
//   TESSERA_CUBLAS_LIBRARY=path  the library to open (default libcublas.so.13)
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "engine/base/shared_library.h"

namespace tessera::resource {

// The entry points Tessera calls, X(member, symbol) for each, resolved from
// the opened library.
#define TS_CUBLAS_FUNCTIONS(X)                              \
  X(create, cublasCreate_v2)                                \
  X(set_stream, cublasSetStream_v2)                         \
  X(set_math_mode, cublasSetMathMode)                       \
  X(gemm_strided_batched_ex, cublasGemmStridedBatchedEx_64) \
  X(strsm, cublasStrsm_v2_64)                               \
  X(dtrsm, cublasDtrsm_v2_64)                               \
  X(sgetrf_batched, cublasSgetrfBatched)                    \
  X(dgetrf_batched, cublasDgetrfBatched)                    \
  X(sgetri_batched, cublasSgetriBatched)                    \
  X(dgetri_batched, cublasDgetriBatched)                    \
  X(status_string, cublasGetStatusString)

struct CublasApi {
  TS_LIBRARY_FUNCTIONS(TS_CUBLAS_FUNCTIONS)
};

// The library, opened once; throws tessera::Error naming what was tried
// when it cannot be opened (a later call tries again).
const CublasApi& Cublas();

// The handle for `stream` on the current device, bound to it. Throws
// tessera::Error when cuBLAS cannot make one (no memory, say).
cublasHandle_t CublasHandle(cudaStream_t stream);

// Whether float32 products may use TF32 tensor cores (read once).
bool CublasAllowTensorCores();

}  // namespace tessera::resource
