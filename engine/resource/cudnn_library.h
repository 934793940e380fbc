// cuDNN for GPU ops, opened on first use as cuBLAS is (cublas_library.h): a
// process that never convolves on a GPU never maps it, and a machine without
// cuDNN runs everything else, its GPU convolutions being a clear error. One
// handle per (device, stream), bound to that stream, kept for the process's
// life. Include only from files built with CUDA.
//
//   TESSERA_CUDNN_LIBRARY=path  the library to open (default libcudnn.so.9)
//   TESSERA_CUDA_ALLOW_TENSOR_CORE=1  lets float32 convolutions use TF32
//       (as for cuBLAS); off by default, so float32 stays float32-exact.
#pragma once

#include <cuda_runtime.h>
#include <cudnn.h>

#include "engine/base/error.h"

namespace tessera::resource {

// The entry points Tessera calls (X(name) for each).
#define TS_CUDNN_FUNCTIONS(X)                      \
  X(cudnnCreate)                                   \
  X(cudnnSetStream)                                \
  X(cudnnGetErrorString)                           \
  X(cudnnCreateTensorDescriptor)                   \
  X(cudnnSetTensorNdDescriptor)                    \
  X(cudnnDestroyTensorDescriptor)                  \
  X(cudnnCreateFilterDescriptor)                   \
  X(cudnnSetFilterNdDescriptor)                    \
  X(cudnnDestroyFilterDescriptor)                  \
  X(cudnnCreateConvolutionDescriptor)              \
  X(cudnnSetConvolutionNdDescriptor)               \
  X(cudnnSetConvolutionGroupCount)                 \
  X(cudnnSetConvolutionMathType)                   \
  X(cudnnDestroyConvolutionDescriptor)             \
  X(cudnnFindConvolutionForwardAlgorithm)          \
  X(cudnnFindConvolutionBackwardDataAlgorithm)     \
  X(cudnnFindConvolutionBackwardFilterAlgorithm)   \
  X(cudnnGetConvolutionForwardAlgorithm_v7)        \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)   \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7) \
  X(cudnnConvolutionForward)                       \
  X(cudnnConvolutionBackwardData)                  \
  X(cudnnConvolutionBackwardFilter)                \
  X(cudnnConvolutionBackwardBias)                  \
  X(cudnnAddTensor)

struct CudnnApi {
#define TS_CUDNN_MEMBER(name) decltype(&::name) name = nullptr;
  TS_CUDNN_FUNCTIONS(TS_CUDNN_MEMBER)
#undef TS_CUDNN_MEMBER
};

// The library, opened once; throws tessera::Error naming what was tried
// when it cannot be opened (a later call tries again).
const CudnnApi& Cudnn();

// The handle for `stream` on the current device, bound to it.
cudnnHandle_t CudnnHandle(cudaStream_t stream);

}  // namespace tessera::resource

// TS_CUDNN_CALL(api.cudnnX(...), "Convolution") throws tessera::Error naming
// the op, the call and cuDNN's reason.
#define TS_CUDNN_CALL(api, expr, who)                                     \
  do {                                                                    \
    const cudnnStatus_t ts_cudnn_st_ = (expr);                            \
    if (ts_cudnn_st_ != CUDNN_STATUS_SUCCESS)                             \
      TS_THROW << (who) << " on the GPU: " << #expr                       \
               << " failed: " << (api).cudnnGetErrorString(ts_cudnn_st_); \
  } while (0)
