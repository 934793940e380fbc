// Opening the CUDA libraries on first use (cuda_library.h).
#include "engine/resource/cuda_library.h"

#include <dlfcn.h>

#include <cstdlib>

#include "engine/base/error.h"

namespace tessera::resource {

void* OpenCudaLibrary(const char* what, const char* default_name, const char* env) {
  const char* chosen = std::getenv(env);
  const char* path = chosen && *chosen ? chosen : default_name;
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    TS_THROW << "cannot open " << what << " (" << (why ? why : path)
             << "); put the CUDA libraries on LD_LIBRARY_PATH or set " << env;
  }
  return lib;
}

}  // namespace tessera::resource
