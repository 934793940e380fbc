// Opening cuDNN on first use, and one handle per (device, stream).
#include "engine/resource/cudnn_library.h"

#include "engine/base/shared_library.h"
#include "engine/resource/cuda_library.h"

namespace tessera::resource {
namespace {

CudnnApi Open() {
  void* lib = OpenCudaLibrary("cuDNN 9", "libcudnn.so.9", "TESSERA_CUDNN_LIBRARY");
  CudnnApi api;
#define TS_CUDNN_RESOLVE(name) BindSymbol(lib, #name, "the cuDNN opened", &api.name);
  TS_CUDNN_FUNCTIONS(TS_CUDNN_RESOLVE)
#undef TS_CUDNN_RESOLVE
  return api;
}

}  // namespace

const CudnnApi& Cudnn() {
  // A throwing initialiser leaves the static unset: the next call tries again.
  static const CudnnApi api = Open();
  return api;
}

cudnnHandle_t CudnnHandle(cudaStream_t stream) {
  static StreamHandles<cudnnHandle_t> handles;
  return handles.Get(stream, [](cudaStream_t s, int device) {
    const CudnnApi& api = Cudnn();
    cudnnHandle_t h = nullptr;
    cudnnStatus_t st = api.cudnnCreate(&h);
    if (st == CUDNN_STATUS_SUCCESS) st = api.cudnnSetStream(h, s);
    if (st != CUDNN_STATUS_SUCCESS)
      TS_THROW << "cuDNN: cannot make a handle for gpu(" << device
               << "): " << api.cudnnGetErrorString(st);
    return h;
  });
}

}  // namespace tessera::resource
