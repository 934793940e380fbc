// The parameters of the control-flow ops, MXNet's names and meanings
// (src/operator/control_flow.cc), and the checks every reader of them runs
// first, so a damaged symbol file is an error naming the node.
//
//   _foreach   inputs: data..., states..., remaining (free) inputs...;
//              subgraph 0, the body; in_data_locs[k] / in_state_locs[j]: the
//              body input fed by slice of data k / state j; remain_locs[r]:
//              the body input fed by the node's input num_data + num_states + r.
//              outputs: num_out_data stacked step outputs, then the states.
//   _while_loop inputs: whatever cond and func read; subgraphs cond, func;
//              cond_input_locs[i] / func_input_locs[i]: the node input feeding
//              that subgraph's input i; func_var_locs[j]: func's input that
//              holds loop variable j. outputs: num_out_data stacked step
//              outputs (max_iterations rows), then the loop variables.
//   _cond      inputs: whatever the three read; subgraphs cond, then, else;
//              *_input_locs as _while_loop's.
// num_args counts the subgraphs too (MXNet passed them as the op's first
// arguments), so a node has num_args - 1, - 2 or - 3 inputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/graph/symbol.h"
#include "engine/op/params.h"

namespace tessera::graph {

struct ForeachParam : op::Params<ForeachParam> {
  int num_args = 0, num_outputs = 0, num_out_data = 0;
  std::vector<int64_t> in_state_locs, in_data_locs, remain_locs;
  static void Declare(op::ParamDecl<ForeachParam>& d);
};

struct WhileLoopParam : op::Params<WhileLoopParam> {
  int num_args = 0, num_outputs = 0, num_out_data = 0;
  int64_t max_iterations = 0;
  std::vector<int64_t> cond_input_locs, func_input_locs, func_var_locs;
  static void Declare(op::ParamDecl<WhileLoopParam>& d);
};

struct CondParam : op::Params<CondParam> {
  int num_args = 0, num_outputs = 0;
  std::vector<int64_t> cond_input_locs, then_input_locs, else_input_locs;
  static void Declare(op::ParamDecl<CondParam>& d);
};

// A subgraph's inputs: its variables in DFSVisit order.
std::vector<NodePtr> SubgraphInputs(const op::Subgraph& sg);

// The checks: subgraph count, each subgraph's input and output counts against
// the locations, every location in range, every node input read.
void CheckForeach(const op::NodeAttrs& attrs);
void CheckWhileLoop(const op::NodeAttrs& attrs);
void CheckCond(const op::NodeAttrs& attrs);

// Whether `op` is one of the three.
bool IsControlFlowOp(const op::Op* op);

}  // namespace tessera::graph
