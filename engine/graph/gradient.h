// The gradient pass: the backward graph of ys with respect to xs, built from
// the ops' FGradient rules in reverse topological order.
#pragma once

#include <vector>

#include "engine/op/node.h"

namespace tessera::graph {

using op::NodeEntry;

// Gradient entries of `xs` (one per x) for L = sum_k <ys[k], head_grads[k]>.
// Gradients of an entry used several times are summed (add_n); an x that
// ys do not depend on gets zeros_like(x). The new nodes only read the
// forward entries their FGradient rules name, so everything else in the
// forward graph can be freed before backward runs.
std::vector<NodeEntry> Gradient(const std::vector<NodeEntry>& ys,
                                const std::vector<NodeEntry>& head_grads,
                                const std::vector<NodeEntry>& xs);

}  // namespace tessera::graph
