// The names of an op node's inputs and outputs, as symbols show them: from
// FListInputNames / FListOutputNames, else from the registered arguments,
// else "arg0", "arg1", ... (and "output", or "output0", "output1", ...).
#pragma once

#include <string>
#include <vector>

#include "engine/op/op.h"

namespace tessera::graph {

std::vector<std::string> InputNames(const op::NodeAttrs& attrs);
std::vector<std::string> OutputNames(const op::NodeAttrs& attrs);

}  // namespace tessera::graph
