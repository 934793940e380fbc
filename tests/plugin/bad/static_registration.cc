// Registers from a namespace-scope static, which runs while the library is
// being opened, before the loader can check it: refused, with advice.
#include "ops/custom/op_plugin.h"

TS_REGISTER_OP(plugin_static_op).describe("Registered at dlopen time.");

TESSERA_OP_PLUGIN() {}
