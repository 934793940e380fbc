// Opening cuDNN on first use, and one handle per (device, stream).
#include "engine/resource/cudnn_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <utility>

#include "engine/base/cuda_utils.h"

namespace tessera::resource {
namespace {

CudnnApi Open() {
  const char* chosen = std::getenv("TESSERA_CUDNN_LIBRARY");
  const char* path = chosen && *chosen ? chosen : "libcudnn.so.9";
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    TS_THROW << "cannot open cuDNN (" << (why ? why : path)
             << "); put cuDNN 9 on LD_LIBRARY_PATH or set TESSERA_CUDNN_LIBRARY";
  }
  CudnnApi api;
#define TS_CUDNN_RESOLVE(name)                                        \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(lib, #name)); \
  TS_CHECK(api.name) << "the cuDNN opened (" << path << ") has no " #name;
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
  static std::mutex mu;
  static std::map<std::pair<int, cudaStream_t>, cudnnHandle_t> handles;
  int device = 0;
  TS_CUDA_CALL(cudaGetDevice(&device));
  const CudnnApi& api = Cudnn();
  std::lock_guard<std::mutex> lock(mu);
  auto [it, fresh] = handles.try_emplace({device, stream}, nullptr);
  if (!fresh) return it->second;
  cudnnHandle_t h = nullptr;
  cudnnStatus_t st = api.cudnnCreate(&h);
  if (st == CUDNN_STATUS_SUCCESS) st = api.cudnnSetStream(h, stream);
  if (st != CUDNN_STATUS_SUCCESS) {
    handles.erase(it);
    TS_THROW << "cuDNN: cannot make a handle for gpu(" << device
             << "): " << api.cudnnGetErrorString(st);
  }
  return it->second = h;
}

}  // namespace tessera::resource
