#include "engine/base/tblob.h"

namespace tessera {

const char* OpReqName(OpReqType req) {
  switch (req) {
    case kNullOp:
      return "null";
    case kWriteTo:
      return "write";
    case kWriteInplace:
      return "inplace";
    case kAddTo:
      return "add";
  }
  return "?";
}

}  // namespace tessera
