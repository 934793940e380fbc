// Registers a new op, then one under a built-in name (`quadratic`): the
// second is refused and the built-in keeps its attributes.
#include "ops/custom/op_plugin.h"

TESSERA_OP_PLUGIN() {
  TS_REGISTER_OP(plugin_before_duplicate).describe("Registered before the failure.");
  TS_REGISTER_OP(quadratic).describe("must not replace the built-in quadratic's docs");
}
