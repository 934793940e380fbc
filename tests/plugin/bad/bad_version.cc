// Says it was built for the next plugin ABI version. Its registration must
// never run: the loader refuses it first.
#include "ops/custom/op_plugin.h"

extern "C" __attribute__((visibility("default"))) const TesseraOpPluginInfo*
tessera_op_plugin_abi() {
  static TesseraOpPluginInfo info = *tessera::op::plugin::Info();
  info.abi_version = TESSERA_OP_PLUGIN_ABI_VERSION + 1;
  return &info;
}

extern "C" __attribute__((visibility("default"))) int tessera_op_plugin_register(char*, size_t) {
  tessera::op::Op::Register("bad_version_op");
  return 0;
}
