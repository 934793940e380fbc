// Protects the operators that exist while a plugin registers its own: with a
// RegistrationGuard alive on this thread, registering a name (or an alias)
// that was already taken when the guard began is an error, instead of
// returning the existing op for the newcomer to overwrite its attributes.
// Names registered after the guard began may be registered again (a
// SimpleOp's cpu and gpu functions come in two calls). Outside a guard,
// registering an existing name returns it, as NNVM does: the built-in ops
// rely on that to add GPU kernels from their .cu files.
#pragma once

#include <cstdint>

namespace tessera::op {

class RegistrationGuard {
 public:
  RegistrationGuard();
  ~RegistrationGuard();
  RegistrationGuard(const RegistrationGuard&) = delete;
  RegistrationGuard& operator=(const RegistrationGuard&) = delete;

 private:
  uint32_t saved_;  // the enclosing guard's boundary, restored on exit
};

}  // namespace tessera::op
