// Shape and dtype inference over a whole graph: FInferShape / FInferType run
// on every node, forward then backward, until nothing changes, so unknown
// dimensions (0) flow both ways through ops ("a{2,0} * b + b * c{0,3}").
#pragma once

#include <string>
#include <vector>

#include "engine/base/dtype.h"
#include "engine/base/shape.h"
#include "engine/graph/indexed_graph.h"

namespace tessera::graph {

// `shapes` has one slot per entry (IndexedGraph::entry_id), seeded with what
// is known (ndim 0 or dimension 0: unknown). Variables carrying a
// "__shape__" attribute are seeded from it. Fills what can be inferred and
// returns how many entries stay incomplete. A conflict throws an error
// naming the node, its op, the argument and both shapes.
size_t InferShapes(const IndexedGraph& g, std::vector<Shape>* shapes);

// The same for dtypes (DType::kUnknown unknown; "__dtype__" seeds).
size_t InferTypes(const IndexedGraph& g, std::vector<DType>* types);

// "node 'fc1' (FullyConnected), input 'weight'": how errors name an entry.
std::string DescribeInput(const IndexedGraph& g, uint32_t node_id, uint32_t input);

}  // namespace tessera::graph
