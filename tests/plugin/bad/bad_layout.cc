// The right version, but a TBlob of another size, as if it had been built
// against headers that changed without a version bump.
#include <cstring>

#include "ops/custom/op_plugin.h"

static_assert(tessera::op::plugin::kLayoutSizes[9] == sizeof(tessera::TBlob),
              "TBlob moved in TESSERA_OP_PLUGIN_LAYOUT_TYPES: update the index below");

extern "C" __attribute__((visibility("default"))) const TesseraOpPluginInfo*
tessera_op_plugin_abi() {
  static TesseraOpPluginInfo info = *tessera::op::plugin::Info();
  static uint32_t sizes[64];
  std::memcpy(sizes, info.sizes, info.num_sizes * sizeof(uint32_t));
  sizes[9] += 8;  // ::tessera::TBlob, the 10th of TESSERA_OP_PLUGIN_LAYOUT_TYPES
  info.sizes = sizes;
  return &info;
}

extern "C" __attribute__((visibility("default"))) int tessera_op_plugin_register(char*, size_t) {
  tessera::op::Op::Register("bad_layout_op");
  return 0;
}
