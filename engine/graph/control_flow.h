// Control flow in symbols: MXNet's subgraph operators _foreach, _while_loop
// and _cond (mx.sym.contrib.foreach / while_loop / cond).
//
// A control-flow node carries its bodies as subgraphs (NodeAttrs::subgraphs)
// and MXNet's parameters mapping the subgraphs' inputs to the node's inputs,
// so a symbol holding one lists its arguments, infers shapes and types
// through the bodies, and saves to and loads from MXNet's JSON ("subgraphs"
// on the node).
//
// Building (the Make* functions): a body is a symbol built over placeholder
// variables. Every node of a body that depends on no placeholder is cut out
// and computed before the loop, outside the subgraph, as an input of the node
// (MXNet cuts a body at the symbols made outside it; here a node that reads
// no loop value is outside by definition, so a value that does not change
// from step to step is computed once). A placeholder the bodies never read is
// an error, as MXNet's "loop_var doesn't involve into the computation".
//
// Running: a bound graph is static, with every shape known, so binding
// expands each control-flow node into ordinary nodes (ExpandControlFlow):
// foreach into one copy of the body per step of the data's first axis, fed
// by `split` and collected by `stack`; while_loop into max_iterations copies
// of cond and func, where a step after cond first fails keeps the loop
// variables as they were and outputs zeros (`where` on the running product of
// cond's values); cond into both branches and a `where` on the condition. The
// gradient, the memory plan and the engine then see plain nodes. The cost of
// that choice: while_loop always runs max_iterations steps and cond both
// branches (their values are as MXNet's, the unused ones are masked).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/base/dtype.h"
#include "engine/base/shape.h"
#include "engine/graph/indexed_graph.h"
#include "engine/graph/symbol.h"

namespace tessera::graph {

// foreach(body, data, init_states): `body` groups the step outputs
// (num_out_data of them) and then the new states, built over `data_vars` (one
// slice of each data array) and `state_vars`. Outputs: the step outputs
// stacked on a new first axis, then the final states.
Symbol MakeForeach(const Symbol& body, size_t num_out_data, const std::vector<Symbol>& data_vars,
                   const std::vector<Symbol>& state_vars, const std::vector<Symbol>& data,
                   const std::vector<Symbol>& init_states, std::string name);

// while_loop(cond, func, loop_vars, max_iterations): `cond` (one output with
// one element) and `func` (num_out_data step outputs, then the new loop
// variables) are built over `var_placeholders`. Outputs: the step outputs
// stacked on a new first axis of max_iterations rows, zero past the last step,
// then the final loop variables.
Symbol MakeWhileLoop(const Symbol& cond, const Symbol& func, size_t num_out_data,
                     const std::vector<Symbol>& var_placeholders,
                     const std::vector<Symbol>& loop_vars, int64_t max_iterations,
                     std::string name);

// cond(pred, then, else): the outputs of `then_out` where pred's one value is
// nonzero, else those of `else_out` (same count and shapes).
Symbol MakeCond(const Symbol& pred, const Symbol& then_out, const Symbol& else_out,
                std::string name);

// Whether a control-flow node is reachable from `heads`.
bool HasControlFlow(const std::vector<NodeEntry>& heads);

// Seeds the shapes and dtypes of a graph's variables (what the caller binds).
using SeedFn = std::function<void(const IndexedGraph&, std::vector<Shape>*, std::vector<DType>*)>;

// `heads` with every control-flow node (nested ones too) replaced by the
// ordinary nodes that compute it, as the file comment says. Variables are
// kept (the same nodes), so a bound argument is the same node before and
// after. Needs the shapes that set the number of steps (foreach's data) and
// the masks' shapes (while_loop's and cond's outputs): an error names the
// node where they cannot be inferred.
std::vector<NodeEntry> ExpandControlFlow(const std::vector<NodeEntry>& heads, const SeedFn& seed);

}  // namespace tessera::graph
