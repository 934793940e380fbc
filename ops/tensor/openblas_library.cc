// Opening OpenBLAS once, for GEMM and LAPACK alike.
#include "ops/tensor/openblas_library.h"

#include <cblas.h>
#include <dlfcn.h>

#include <string>

#include "engine/base/error.h"

namespace tessera::op::openblas {
namespace {

void* Open() {
  void* lib = nullptr;
  std::string tried;
  for (const char* path : {TESSERA_OPENBLAS_LIBRARY, "libopenblas.so.0"}) {
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib) break;
    const char* why = dlerror();
    tried += std::string(tried.empty() ? "" : "; ") + (why ? why : path);
  }
  TS_CHECK(lib) << "cannot load OpenBLAS (install libopenblas0-pthread): " << tried;
  auto set_threads =
      reinterpret_cast<decltype(&openblas_set_num_threads)>(dlsym(lib, "openblas_set_num_threads"));
  TS_CHECK(set_threads) << "the OpenBLAS loaded has no openblas_set_num_threads";
  set_threads(1);  // callers split work over OpenMP instead
  return lib;
}

// Loaded once; a throwing initialiser leaves the static unset, so the next
// call tries again.
void* Library(const char* who) {
  try {
    static void* const lib = Open();
    return lib;
  } catch (const Error& e) {
    TS_THROW << who << ": " << e.what();
  }
}

}  // namespace

void* Symbol(const char* name, const char* who) {
  void* lib = Library(who);
  void* f = dlsym(lib, name);
  TS_CHECK(f) << who << ": the OpenBLAS loaded has no " << name;
  return f;
}

}  // namespace tessera::op::openblas
