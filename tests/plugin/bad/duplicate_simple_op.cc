// Takes the name of a built-in SimpleOp (`smooth_l1`): refused before its
// function can replace the built-in one.
#include "ops/custom/op_plugin.h"

namespace {
void Zero(const tessera::TBlob&, const tessera::op::EnvArguments&, tessera::TBlob*,
          tessera::OpReqType, tessera::RunContext) {}
}  // namespace

TESSERA_OP_PLUGIN() {
  using namespace tessera::op;
  TS_REGISTER_SIMPLE_OP(smooth_l1, cpu).set_function(cpu::kDevice, Zero);
}
