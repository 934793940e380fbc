// Binding the functions of an opened shared library (shared_library.h).
#include "engine/base/shared_library.h"

#include <dlfcn.h>

#include "engine/base/error.h"

namespace tessera {

void* FindSymbol(void* lib, const char* name) {
  return dlsym(lib, name);
}

void* RequireSymbol(void* lib, const char* name, const char* owner) {
  void* fn = dlsym(lib, name);
  TS_CHECK(fn) << owner << " has no " << name;
  return fn;
}

}  // namespace tessera
