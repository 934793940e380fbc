// Loads C++ operator plugins (shared libraries made with TESSERA_OP_PLUGIN()
// from ops/custom/op_plugin.h) into the running process.
#pragma once

#include <string>
#include <vector>

namespace tessera::op {

// Opens the library at `path` (RTLD_NOW | RTLD_LOCAL; its undefined symbols
// resolve against the executable), checks its entry points and the ABI it
// was built for, then runs its registration under a RegistrationGuard, so
// taking an existing operator name is an error. Returns the names of the
// operators it registered (the `_backward_` ones included), in registration
// order. Every failure is a tessera::Error naming `path` and the problem.
//
// Loading a library that is already loaded (by any path naming the same
// file) runs nothing again and returns the names of the first load. A
// library is never unloaded once its registration has run: the registry
// holds pointers into its code.
std::vector<std::string> LoadOpPlugin(const std::string& path);

// The libraries loaded so far (canonical paths), in load order.
std::vector<std::string> LoadedOpPlugins();

}  // namespace tessera::op
