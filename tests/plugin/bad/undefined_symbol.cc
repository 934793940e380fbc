// Calls a function tessera does not define, as a plugin built against other
// headers would: dlopen (RTLD_NOW) fails, and the error names the function.
#include "ops/custom/op_plugin.h"

namespace tessera::op {
void FunctionTesseraDoesNotHave(int);
}  // namespace tessera::op

TESSERA_OP_PLUGIN() {
  tessera::op::FunctionTesseraDoesNotHave(1);
}
