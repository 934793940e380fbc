// A symbol run node by node as imperative calls: each node is one Invoke, so
// under autograd's recording the calls are recorded as if typed one by one.
// This is how a Gluon SymbolBlock runs while recording (a bound executor
// cannot be differentiated by autograd).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/graph/symbol.h"
#include "engine/ndarray/ndarray.h"

namespace tessera::graph {

// The outputs of `sym` with its variables bound by name to `args` (every
// argument and auxiliary state must be given; an auxiliary state is written
// by the ops that update it, as in an executor's training forward).
std::vector<NDArray> RunImperative(const Symbol& sym, const std::map<std::string, NDArray>& args);

}  // namespace tessera::graph
