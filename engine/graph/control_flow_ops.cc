// The control-flow ops _foreach, _while_loop and _cond (control_flow_params.h
// states their inputs, outputs and parameters): the checks, and shape and
// type inference through the subgraphs, forward and backward, so a body's
// unknown sizes flow both ways as through any other node. They have no
// kernel: binding expands them (control_flow.h); called on arrays they are an
// error that says so.
#include <algorithm>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "engine/graph/control_flow_params.h"
#include "engine/graph/infer.h"
#include "engine/op/deferred_init.h"
#include "engine/op/infer_utils.h"
#include "engine/op/op.h"
#include "engine/op/op_attr_types.h"

namespace tessera::graph {

using op::NodeAttrs;
using op::OpLabel;
using op::ParamDecl;
using op::ParamsOf;
using op::Subgraph;

void ForeachParam::Declare(ParamDecl<ForeachParam>& d) {
  d.field("num_args", &ForeachParam::num_args)
      .set_lower_bound(1)
      .describe("Number of inputs, the body counted (MXNet's convention).");
  d.field("num_outputs", &ForeachParam::num_outputs)
      .set_lower_bound(1)
      .describe("Number of outputs: the step outputs, then the states.");
  d.field("num_out_data", &ForeachParam::num_out_data)
      .set_lower_bound(0)
      .describe("Number of step outputs (stacked along a new first axis).");
  d.field("in_state_locs", &ForeachParam::in_state_locs)
      .describe("The body input each state feeds.");
  d.field("in_data_locs", &ForeachParam::in_data_locs)
      .describe("The body input each data array's slice feeds.");
  d.field("remain_locs", &ForeachParam::remain_locs)
      .describe("The body input each remaining node input feeds.");
}

void WhileLoopParam::Declare(ParamDecl<WhileLoopParam>& d) {
  d.field("num_args", &WhileLoopParam::num_args)
      .set_lower_bound(1)
      .describe("Number of inputs, cond and func counted (MXNet's convention).");
  d.field("num_outputs", &WhileLoopParam::num_outputs)
      .set_lower_bound(1)
      .describe("Number of outputs: the step outputs, then the loop variables.");
  d.field("num_out_data", &WhileLoopParam::num_out_data)
      .set_lower_bound(0)
      .describe("Number of step outputs (stacked along a new first axis).");
  d.field("max_iterations", &WhileLoopParam::max_iterations)
      .set_lower_bound(1)
      .describe("The most steps the loop takes; the stacked outputs have this many rows.");
  d.field("cond_input_locs", &WhileLoopParam::cond_input_locs)
      .describe("The node input feeding each input of cond.");
  d.field("func_input_locs", &WhileLoopParam::func_input_locs)
      .describe("The node input feeding each input of func.");
  d.field("func_var_locs", &WhileLoopParam::func_var_locs)
      .describe("The input of func holding each loop variable.");
}

void CondParam::Declare(ParamDecl<CondParam>& d) {
  d.field("num_args", &CondParam::num_args)
      .set_lower_bound(1)
      .describe("Number of inputs, the three subgraphs counted (MXNet's convention).");
  d.field("num_outputs", &CondParam::num_outputs).set_lower_bound(1).describe("Number of outputs.");
  d.field("cond_input_locs", &CondParam::cond_input_locs)
      .describe("The node input feeding each input of cond.");
  d.field("then_input_locs", &CondParam::then_input_locs)
      .describe("The node input feeding each input of the then branch.");
  d.field("else_input_locs", &CondParam::else_input_locs)
      .describe("The node input feeding each input of the else branch.");
}

std::vector<NodePtr> SubgraphInputs(const Subgraph& sg) {
  return Symbol{sg.outputs}.ListInputs(Symbol::InputKind::kAll);
}

namespace {

const Subgraph& SubgraphAt(const NodeAttrs& attrs, size_t i, size_t want, const char* what) {
  TS_CHECK(attrs.subgraphs.size() == want)
      << OpLabel(attrs) << ": has " << attrs.subgraphs.size() << " subgraph(s), needs " << want
      << " (" << what << "); a control-flow node is built by mx.sym.contrib."
      << (want == 1   ? "foreach"
          : want == 2 ? "while_loop"
                      : "cond");
  TS_CHECK(attrs.subgraphs[i] && !attrs.subgraphs[i]->outputs.empty())
      << OpLabel(attrs) << ": subgraph " << i << " is empty";
  return *attrs.subgraphs[i];
}

// `locs` has one entry per input of `sg`, each in [0, limit), each once.
void CheckLocs(const NodeAttrs& attrs, const std::vector<int64_t>& locs, int64_t limit,
               const char* name, bool distinct = true) {
  std::unordered_set<int64_t> seen;
  for (int64_t l : locs) {
    TS_CHECK(l >= 0 && l < limit) << OpLabel(attrs) << ": " << name << " holds " << l
                                  << ", outside [0, " << limit << ")";
    TS_CHECK(!distinct || seen.insert(l).second)
        << OpLabel(attrs) << ": " << name << " holds " << l << " twice";
  }
}

void CheckInputCount(const NodeAttrs& attrs, const Subgraph& sg, size_t locs, const char* what) {
  const size_t n = SubgraphInputs(sg).size();
  TS_CHECK(n == locs) << OpLabel(attrs) << ": the " << what << " subgraph has " << n
                      << " input(s) but the parameters place " << locs;
}

// Every node input feeds some subgraph input (an unread input would leave
// a bound argument out of the expanded graph).
void CheckAllRead(const NodeAttrs& attrs, int num_args,
                  const std::vector<const std::vector<int64_t>*>& lists) {
  std::vector<bool> read(size_t(num_args), false);
  for (const auto* l : lists)
    for (int64_t v : *l) read[size_t(v)] = true;
  for (int i = 0; i < num_args; ++i)
    TS_CHECK(read[size_t(i)]) << OpLabel(attrs) << ": input " << i << " feeds no subgraph input";
}

}  // namespace

void CheckForeach(const NodeAttrs& attrs) {
  const auto& p = ParamsOf<ForeachParam>(attrs);
  const Subgraph& body = SubgraphAt(attrs, 0, 1, "the body");
  const int64_t nd = int64_t(p.in_data_locs.size()), ns = int64_t(p.in_state_locs.size()),
                nr = int64_t(p.remain_locs.size());
  TS_CHECK(nd >= 1) << OpLabel(attrs) << ": needs at least one data input (in_data_locs)";
  TS_CHECK(nd + ns + nr + 1 == p.num_args)
      << OpLabel(attrs) << ": num_args " << p.num_args << " but the body, " << nd << " data, " << ns
      << " state and " << nr << " remaining input(s)";
  TS_CHECK(p.num_out_data + ns == p.num_outputs)
      << OpLabel(attrs) << ": num_outputs " << p.num_outputs << " but " << p.num_out_data
      << " step output(s) and " << ns << " state(s)";
  TS_CHECK(body.outputs.size() == size_t(p.num_outputs))
      << OpLabel(attrs) << ": the body has " << body.outputs.size() << " output(s), needs "
      << p.num_outputs;
  CheckInputCount(attrs, body, size_t(nd + ns + nr), "body");
  std::vector<int64_t> all = p.in_data_locs;
  all.insert(all.end(), p.in_state_locs.begin(), p.in_state_locs.end());
  all.insert(all.end(), p.remain_locs.begin(), p.remain_locs.end());
  CheckLocs(attrs, all, nd + ns + nr, "in_data_locs, in_state_locs and remain_locs");
}

void CheckWhileLoop(const NodeAttrs& attrs) {
  const auto& p = ParamsOf<WhileLoopParam>(attrs);
  const Subgraph& cond = SubgraphAt(attrs, 0, 2, "cond and func");
  const Subgraph& func = SubgraphAt(attrs, 1, 2, "cond and func");
  const int64_t nv = int64_t(p.func_var_locs.size());
  TS_CHECK(nv >= 1) << OpLabel(attrs) << ": needs at least one loop variable (func_var_locs)";
  TS_CHECK(p.num_out_data + nv == p.num_outputs)
      << OpLabel(attrs) << ": num_outputs " << p.num_outputs << " but " << p.num_out_data
      << " step output(s) and " << nv << " loop variable(s)";
  TS_CHECK(cond.outputs.size() == 1)
      << OpLabel(attrs) << ": cond has " << cond.outputs.size() << " outputs, needs 1";
  TS_CHECK(func.outputs.size() == size_t(p.num_outputs))
      << OpLabel(attrs) << ": func has " << func.outputs.size() << " output(s), needs "
      << p.num_outputs;
  CheckInputCount(attrs, cond, p.cond_input_locs.size(), "cond");
  CheckInputCount(attrs, func, p.func_input_locs.size(), "func");
  const int inputs = p.num_args - 2;  // cond and func count among num_args
  TS_CHECK(inputs >= 1) << OpLabel(attrs) << ": num_args " << p.num_args
                        << " leaves no input beside cond and func";
  CheckLocs(attrs, p.cond_input_locs, inputs, "cond_input_locs");
  CheckLocs(attrs, p.func_input_locs, inputs, "func_input_locs");
  CheckLocs(attrs, p.func_var_locs, int64_t(p.func_input_locs.size()), "func_var_locs");
  CheckAllRead(attrs, inputs, {&p.cond_input_locs, &p.func_input_locs});
}

void CheckCond(const NodeAttrs& attrs) {
  const auto& p = ParamsOf<CondParam>(attrs);
  const Subgraph& cond = SubgraphAt(attrs, 0, 3, "cond, then and else");
  const Subgraph& then_g = SubgraphAt(attrs, 1, 3, "cond, then and else");
  const Subgraph& else_g = SubgraphAt(attrs, 2, 3, "cond, then and else");
  TS_CHECK(cond.outputs.size() == 1)
      << OpLabel(attrs) << ": cond has " << cond.outputs.size() << " outputs, needs 1";
  TS_CHECK(then_g.outputs.size() == size_t(p.num_outputs) &&
           else_g.outputs.size() == size_t(p.num_outputs))
      << OpLabel(attrs) << ": the branches have " << then_g.outputs.size() << " and "
      << else_g.outputs.size() << " outputs, both need " << p.num_outputs;
  CheckInputCount(attrs, cond, p.cond_input_locs.size(), "cond");
  CheckInputCount(attrs, then_g, p.then_input_locs.size(), "then");
  CheckInputCount(attrs, else_g, p.else_input_locs.size(), "else");
  const int inputs = p.num_args - 3;  // the three subgraphs count among num_args
  TS_CHECK(inputs >= 0) << OpLabel(attrs) << ": num_args " << p.num_args
                        << " is fewer than its three subgraphs";
  CheckLocs(attrs, p.cond_input_locs, inputs, "cond_input_locs");
  CheckLocs(attrs, p.then_input_locs, inputs, "then_input_locs");
  CheckLocs(attrs, p.else_input_locs, inputs, "else_input_locs");
  CheckAllRead(attrs, inputs, {&p.cond_input_locs, &p.then_input_locs, &p.else_input_locs});
}

bool IsControlFlowOp(const op::Op* op) {
  static const op::Op* const kOps[] = {op::Op::Find("_foreach"), op::Op::Find("_while_loop"),
                                       op::Op::Find("_cond")};
  return op && std::find(std::begin(kOps), std::end(kOps), op) != std::end(kOps);
}

namespace {

// ---- inference through a subgraph ----

bool MergeValue(Shape* to, const Shape& from) {
  return MergeShape(to, from);
}
bool MergeValue(DType* to, DType from) {
  if (from == DType::kUnknown) return true;
  if (*to == DType::kUnknown) *to = from;
  return *to == from;
}
// The value an entry starts from (DType{} is float32, MXNet's flag 0).
template <typename V>
V Unknown() {
  if constexpr (std::is_same_v<V, DType>) {
    return DType::kUnknown;
  } else {
    return V();
  }
}

std::string Text(const Shape& s) {
  return s.ToString();
}
std::string Text(DType t) {
  return t == DType::kUnknown ? "unknown" : DTypeName(t);
}
size_t RunInfer(const IndexedGraph& g, std::vector<Shape>* v) {
  return InferShapes(g, v);
}
size_t RunInfer(const IndexedGraph& g, std::vector<DType>* v) {
  return InferTypes(g, v);
}

// Infers `sg` from its inputs' values `ins` and its outputs' `outs` and
// writes back what it found. An error inside names the subgraph.
template <typename V>
void InferSubgraph(const NodeAttrs& attrs, const Subgraph& sg, const char* what,
                   std::vector<V>* ins, std::vector<V>* outs) {
  const IndexedGraph g(sg.outputs);
  const std::vector<NodePtr> inputs = SubgraphInputs(sg);
  TS_DCHECK(inputs.size() == ins->size() && sg.outputs.size() == outs->size());
  std::vector<V> vals(g.num_entries(), Unknown<V>());
  for (size_t i = 0; i < inputs.size(); ++i)
    vals[g.entry_id(g.node_id(inputs[i].get()), 0)] = (*ins)[i];
  for (size_t k = 0; k < outs->size(); ++k) {
    V& slot = vals[g.entry_id(sg.outputs[k])];
    TS_CHECK(MergeValue(&slot, (*outs)[k]))
        << OpLabel(attrs) << ": output " << k << " of the " << what << " subgraph conflicts";
  }
  try {
    RunInfer(g, &vals);
  } catch (const Error& e) {
    TS_THROW << OpLabel(attrs) << ", in its " << what << " subgraph: " << e.what();
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    (*ins)[i] = vals[g.entry_id(g.node_id(inputs[i].get()), 0)];
  for (size_t k = 0; k < outs->size(); ++k) (*outs)[k] = vals[g.entry_id(sg.outputs[k])];
}

// A slice of an array along its first axis (a 1-D array's slice is (1,), as
// `split` with squeeze_axis gives), and the array the slices stack into.
Shape DropFirst(const Shape& s) {
  if (s.ndim() <= 1) return s.ndim() == 0 ? Shape() : Shape{1};
  return Shape(s.begin() + 1, s.begin() + s.ndim());
}
Shape Prepend(int64_t first, const Shape& s) {
  if (s.ndim() == 0) return Shape();
  std::vector<int64_t> d{first};
  d.insert(d.end(), s.begin(), s.begin() + s.ndim());
  return Shape(d);
}

// Writes the stacked form of `sub` (steps rows) to slot i, or only the step
// count where the slot already has a shape.
void AssignStacked(const NodeAttrs& attrs, std::vector<Shape>* v, size_t i, int64_t steps,
                   const Shape& sub, const char* what) {
  Shape s = (*v)[i];
  if (s.ndim() == 0) {
    s = Prepend(steps, sub);
  } else if (steps > 0) {
    s[0] = steps;
  }
  if (s.ndim() > 0) op::AssignShape(attrs, v, i, s, what);
}

int64_t FirstDim(const Shape& s) {
  return s.ndim() > 0 ? s[0] : 0;
}

bool ForeachShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  CheckForeach(attrs);
  const auto& p = ParamsOf<ForeachParam>(attrs);
  const size_t nd = p.in_data_locs.size(), ns = p.in_state_locs.size(),
               nod = size_t(p.num_out_data);
  int64_t steps = 0;
  for (size_t k = 0; k < nd; ++k) steps = std::max(steps, FirstDim((*in)[k]));
  for (size_t k = 0; k < nod; ++k) steps = std::max(steps, FirstDim((*out)[k]));
  for (size_t k = 0; k < nd; ++k)
    TS_CHECK(FirstDim((*in)[k]) == 0 || FirstDim((*in)[k]) == steps)
        << OpLabel(attrs) << ": data " << k << " has shape " << (*in)[k] << ", " << steps
        << " steps elsewhere: every data array needs the same first axis";
  std::vector<Shape> sin(in->size()), sout(out->size());
  for (size_t k = 0; k < nd; ++k) sin[size_t(p.in_data_locs[k])] = DropFirst((*in)[k]);
  for (size_t j = 0; j < ns; ++j) {
    Shape s = (*in)[nd + j];
    TS_CHECK(MergeShape(&s, (*out)[nod + j]))
        << OpLabel(attrs) << ": state " << j << " enters as " << (*in)[nd + j] << " and leaves as "
        << (*out)[nod + j] << "; a state keeps its shape";
    sin[size_t(p.in_state_locs[j])] = s;
    sout[nod + j] = s;
  }
  for (size_t r = 0; r < p.remain_locs.size(); ++r)
    sin[size_t(p.remain_locs[r])] = (*in)[nd + ns + r];
  for (size_t k = 0; k < nod; ++k) sout[k] = DropFirst((*out)[k]);
  InferSubgraph(attrs, *attrs.subgraphs[0], "body", &sin, &sout);
  for (size_t k = 0; k < nd; ++k)
    AssignStacked(attrs, in, k, steps, sin[size_t(p.in_data_locs[k])], "input");
  for (size_t j = 0; j < ns; ++j) {
    Shape s = sin[size_t(p.in_state_locs[j])];
    TS_CHECK(MergeShape(&s, sout[nod + j]))
        << OpLabel(attrs) << ": state " << j << " enters the body as "
        << sin[size_t(p.in_state_locs[j])] << " and leaves as " << sout[nod + j]
        << "; a state keeps its shape";
    op::AssignShape(attrs, in, nd + j, s, "input");
    op::AssignShape(attrs, out, nod + j, s, "output");
  }
  for (size_t r = 0; r < p.remain_locs.size(); ++r)
    op::AssignShape(attrs, in, nd + ns + r, sin[size_t(p.remain_locs[r])], "input");
  for (size_t k = 0; k < nod; ++k) AssignStacked(attrs, out, k, steps, sout[k], "output");
  return op::AllKnown(*in) && op::AllKnown(*out);
}

bool ForeachType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  CheckForeach(attrs);
  const auto& p = ParamsOf<ForeachParam>(attrs);
  const size_t nd = p.in_data_locs.size(), ns = p.in_state_locs.size(),
               nod = size_t(p.num_out_data);
  std::vector<DType> sin(in->size(), DType::kUnknown), sout(out->size(), DType::kUnknown);
  for (size_t k = 0; k < nd; ++k) sin[size_t(p.in_data_locs[k])] = (*in)[k];
  for (size_t j = 0; j < ns; ++j) {
    DType t = (*in)[nd + j];
    TS_CHECK(MergeValue(&t, (*out)[nod + j]))
        << OpLabel(attrs) << ": state " << j << " changes its dtype";
    sin[size_t(p.in_state_locs[j])] = sout[nod + j] = t;
  }
  for (size_t r = 0; r < p.remain_locs.size(); ++r)
    sin[size_t(p.remain_locs[r])] = (*in)[nd + ns + r];
  for (size_t k = 0; k < nod; ++k) sout[k] = (*out)[k];
  InferSubgraph(attrs, *attrs.subgraphs[0], "body", &sin, &sout);
  for (size_t k = 0; k < nd; ++k)
    op::AssignType(attrs, in, k, sin[size_t(p.in_data_locs[k])], "input");
  for (size_t j = 0; j < ns; ++j) {
    DType t = sin[size_t(p.in_state_locs[j])];
    TS_CHECK(MergeValue(&t, sout[nod + j]))
        << OpLabel(attrs) << ": state " << j << " changes its dtype in the body";
    op::AssignType(attrs, in, nd + j, t, "input");
    op::AssignType(attrs, out, nod + j, t, "output");
  }
  for (size_t r = 0; r < p.remain_locs.size(); ++r)
    op::AssignType(attrs, in, nd + ns + r, sin[size_t(p.remain_locs[r])], "input");
  for (size_t k = 0; k < nod; ++k) op::AssignType(attrs, out, k, sout[k], "output");
  return op::AllKnown(*in) && op::AllKnown(*out);
}

// The node inputs a subgraph reads, as its own inputs' values, and back.
template <typename V>
std::vector<V> Gather(const std::vector<V>& in, const std::vector<int64_t>& locs) {
  std::vector<V> v;
  for (int64_t l : locs) v.push_back(in[size_t(l)]);
  return v;
}
void Scatter(const NodeAttrs& attrs, std::vector<Shape>* in, const std::vector<int64_t>& locs,
             const std::vector<Shape>& v) {
  for (size_t i = 0; i < locs.size(); ++i)
    op::AssignShape(attrs, in, size_t(locs[i]), v[i], "input");
}
void Scatter(const NodeAttrs& attrs, std::vector<DType>* in, const std::vector<int64_t>& locs,
             const std::vector<DType>& v) {
  for (size_t i = 0; i < locs.size(); ++i)
    op::AssignType(attrs, in, size_t(locs[i]), v[i], "input");
}

void Assign(const NodeAttrs& attrs, std::vector<Shape>* v, size_t i, const Shape& s) {
  op::AssignShape(attrs, v, i, s, "output");
}
void Assign(const NodeAttrs& attrs, std::vector<DType>* v, size_t i, DType t) {
  op::AssignType(attrs, v, i, t, "output");
}

// cond's one output: one element (a shape of any rank whose size is 1).
void CheckCondOutput(const NodeAttrs& attrs, const Shape& s) {
  if (!s.known()) return;
  TS_CHECK(s.Size() == 1) << OpLabel(attrs) << ": cond gives an array of shape " << s
                          << "; it must give one value";
}
void CheckCondOutput(const NodeAttrs&, DType) {}

template <typename V>
bool WhileLoopInfer(const NodeAttrs& attrs, std::vector<V>* in, std::vector<V>* out) {
  CheckWhileLoop(attrs);
  const auto& p = ParamsOf<WhileLoopParam>(attrs);
  const size_t nod = size_t(p.num_out_data), nv = p.func_var_locs.size();
  std::vector<V> fin = Gather(*in, p.func_input_locs), fout(out->size(), Unknown<V>());
  for (size_t j = 0; j < nv; ++j) {
    V& v = fin[size_t(p.func_var_locs[j])];
    TS_CHECK(MergeValue(&v, (*out)[nod + j]))
        << OpLabel(attrs) << ": loop variable " << j << " changes its shape or dtype";
    fout[nod + j] = v;
  }
  for (size_t k = 0; k < nod; ++k) {
    if constexpr (std::is_same_v<V, Shape>) {
      fout[k] = DropFirst((*out)[k]);
    } else {
      fout[k] = (*out)[k];
    }
  }
  InferSubgraph(attrs, *attrs.subgraphs[1], "func", &fin, &fout);
  for (size_t j = 0; j < nv; ++j) {
    V v = fin[size_t(p.func_var_locs[j])];
    TS_CHECK(MergeValue(&v, fout[nod + j]))
        << OpLabel(attrs) << ": loop variable " << j << " enters func as "
        << Text(fin[size_t(p.func_var_locs[j])]) << " and leaves as " << Text(fout[nod + j])
        << "; a loop variable keeps its shape and dtype";
    fin[size_t(p.func_var_locs[j])] = v;
    Assign(attrs, out, nod + j, v);
  }
  Scatter(attrs, in, p.func_input_locs, fin);
  for (size_t k = 0; k < nod; ++k) {
    if constexpr (std::is_same_v<V, Shape>) {
      AssignStacked(attrs, out, k, p.max_iterations, fout[k], "output");
    } else {
      Assign(attrs, out, k, fout[k]);
    }
  }
  std::vector<V> cin = Gather(*in, p.cond_input_locs), cout(1, Unknown<V>());
  InferSubgraph(attrs, *attrs.subgraphs[0], "cond", &cin, &cout);
  CheckCondOutput(attrs, cout[0]);
  Scatter(attrs, in, p.cond_input_locs, cin);
  return op::AllKnown(*in) && op::AllKnown(*out);
}

template <typename V>
bool CondInfer(const NodeAttrs& attrs, std::vector<V>* in, std::vector<V>* out) {
  CheckCond(attrs);
  const auto& p = ParamsOf<CondParam>(attrs);
  for (int branch = 1; branch <= 2; ++branch) {
    const std::vector<int64_t>& locs = branch == 1 ? p.then_input_locs : p.else_input_locs;
    std::vector<V> bin = Gather(*in, locs), bout = *out;
    InferSubgraph(attrs, *attrs.subgraphs[size_t(branch)], branch == 1 ? "then" : "else", &bin,
                  &bout);
    Scatter(attrs, in, locs, bin);
    for (size_t k = 0; k < out->size(); ++k) Assign(attrs, out, k, bout[k]);
  }
  std::vector<V> cin = Gather(*in, p.cond_input_locs), cout(1, Unknown<V>());
  InferSubgraph(attrs, *attrs.subgraphs[0], "cond", &cin, &cout);
  CheckCondOutput(attrs, cout[0]);
  Scatter(attrs, in, p.cond_input_locs, cin);
  return op::AllKnown(*in) && op::AllKnown(*out);
}

// MXNet counts the subgraphs among num_args (they were the op's first
// arguments, FInputGraph), so the node has num_args - `graphs` inputs.
template <typename P, int graphs>
uint32_t NumArgs(const NodeAttrs& attrs) {
  return uint32_t(std::max(ParamsOf<P>(attrs).num_args - graphs, 0));
}

// Input names: a foreach's data and states by role, every other input by the
// name of the subgraph variable it feeds.
void NamesFromLocs(const NodeAttrs& attrs, size_t which, const std::vector<int64_t>& locs,
                   std::vector<std::string>* names) {
  if (attrs.subgraphs.size() <= which || !attrs.subgraphs[which]) return;
  const std::vector<NodePtr> vars = SubgraphInputs(*attrs.subgraphs[which]);
  for (size_t i = 0; i < locs.size() && i < vars.size(); ++i) {
    const size_t at = size_t(locs[i]);
    if (at < names->size() && (*names)[at].empty()) (*names)[at] = vars[i]->attrs.name;
  }
}

std::vector<std::string> Filled(std::vector<std::string> names) {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i].empty()) names[i] = "input" + std::to_string(i);
  return names;
}

std::vector<std::string> ForeachInputNames(const NodeAttrs& attrs) {
  const auto& p = ParamsOf<ForeachParam>(attrs);
  std::vector<std::string> names(NumArgs<ForeachParam, 1>(attrs));
  const size_t nd = p.in_data_locs.size(), ns = p.in_state_locs.size();
  for (size_t k = 0; k < nd && k < names.size(); ++k) names[k] = "data" + std::to_string(k);
  for (size_t j = 0; j < ns && nd + j < names.size(); ++j)
    names[nd + j] = "state" + std::to_string(j);
  if (!attrs.subgraphs.empty() && attrs.subgraphs[0]) {
    const std::vector<NodePtr> vars = SubgraphInputs(*attrs.subgraphs[0]);
    for (size_t r = 0; r < p.remain_locs.size() && nd + ns + r < names.size(); ++r)
      if (size_t(p.remain_locs[r]) < vars.size())
        names[nd + ns + r] = vars[size_t(p.remain_locs[r])]->attrs.name;
  }
  return Filled(names);
}

std::vector<std::string> WhileLoopInputNames(const NodeAttrs& attrs) {
  const auto& p = ParamsOf<WhileLoopParam>(attrs);
  std::vector<std::string> names(NumArgs<WhileLoopParam, 2>(attrs));
  for (size_t j = 0; j < p.func_var_locs.size(); ++j) {
    const size_t f = size_t(p.func_var_locs[j]);
    if (f < p.func_input_locs.size() && size_t(p.func_input_locs[f]) < names.size())
      names[size_t(p.func_input_locs[f])] = "loop_var" + std::to_string(j);
  }
  NamesFromLocs(attrs, 1, p.func_input_locs, &names);
  NamesFromLocs(attrs, 0, p.cond_input_locs, &names);
  return Filled(names);
}

std::vector<std::string> CondInputNames(const NodeAttrs& attrs) {
  const auto& p = ParamsOf<CondParam>(attrs);
  std::vector<std::string> names(NumArgs<CondParam, 3>(attrs));
  NamesFromLocs(attrs, 0, p.cond_input_locs, &names);
  NamesFromLocs(attrs, 1, p.then_input_locs, &names);
  NamesFromLocs(attrs, 2, p.else_input_locs, &names);
  return Filled(names);
}

std::vector<std::string> NumberedOutputs(int n) {
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back("output" + std::to_string(i));
  return names;
}

template <typename P>
uint32_t NumOuts(const NodeAttrs& attrs) {
  return uint32_t(std::max(ParamsOf<P>(attrs).num_outputs, 0));
}

// On the registry's first use, with the operator libraries' registrations:
// start-up does not pay for them (engine/op/deferred_init.h).
void RegisterControlFlowOps() {
  TS_REGISTER_OP(_foreach)
      .describe(R"(A loop over the first axis of its data inputs, as MXNet's foreach:
a subgraph (the body) runs once per step on one slice of each data array and
the states, giving step outputs (stacked along a new first axis) and the new
states. Built by mx.sym.contrib.foreach; it runs inside a bound graph, which
unrolls it (one copy of the body per step). Outputs: the stacked step
outputs, then the final states.)")
      .set_num_inputs(NumArgs<ForeachParam, 1>)
      .set_num_outputs(NumOuts<ForeachParam>)
      .set_attr_parser(op::ParamParser<ForeachParam>)
      .add_argument("data", "NDArray[]",
                    "The data arrays, then the states, then the body's "
                    "other inputs.")
      .add_arguments(ForeachParam::Fields())
      .set_attr<op::FListInputNames>("FListInputNames", ForeachInputNames)
      .set_attr<op::FListOutputNames>(
          "FListOutputNames",
          [](const NodeAttrs& a) { return NumberedOutputs(ParamsOf<ForeachParam>(a).num_outputs); })
      .set_attr<op::FInferShape>("FInferShape", ForeachShape)
      .set_attr<op::FInferType>("FInferType", ForeachType);

  TS_REGISTER_OP(_while_loop)
      .describe(R"(A loop while a condition holds, as MXNet's while_loop: subgraph cond
gives one value from the loop variables; while it is nonzero (at most
max_iterations times) subgraph func gives step outputs and new loop
variables. Built by mx.sym.contrib.while_loop; a bound graph unrolls it to
max_iterations steps, where the steps after cond first gives zero keep the
loop variables and output zeros. Outputs: the step outputs stacked along a
new first axis of max_iterations rows, then the final loop variables.)")
      .set_num_inputs(NumArgs<WhileLoopParam, 2>)
      .set_num_outputs(NumOuts<WhileLoopParam>)
      .set_attr_parser(op::ParamParser<WhileLoopParam>)
      .add_argument("data", "NDArray[]", "The inputs of cond and func, loop variables included.")
      .add_arguments(WhileLoopParam::Fields())
      .set_attr<op::FListInputNames>("FListInputNames", WhileLoopInputNames)
      .set_attr<op::FListOutputNames>(
          "FListOutputNames",
          [](const NodeAttrs& a) {
            return NumberedOutputs(ParamsOf<WhileLoopParam>(a).num_outputs);
          })
      .set_attr<op::FInferShape>("FInferShape", WhileLoopInfer<Shape>)
      .set_attr<op::FInferType>("FInferType", WhileLoopInfer<DType>);

  TS_REGISTER_OP(_cond)
      .describe(R"(A choice between two subgraphs, as MXNet's cond: the outputs of
the then branch where subgraph cond gives a nonzero value, else those of the
else branch (both with the same outputs). Built by mx.sym.contrib.cond; a
bound graph computes both branches and selects.)")
      .set_num_inputs(NumArgs<CondParam, 3>)
      .set_num_outputs(NumOuts<CondParam>)
      .set_attr_parser(op::ParamParser<CondParam>)
      .add_argument("data", "NDArray[]", "The inputs of cond and of both branches.")
      .add_arguments(CondParam::Fields())
      .set_attr<op::FListInputNames>("FListInputNames", CondInputNames)
      .set_attr<op::FListOutputNames>(
          "FListOutputNames",
          [](const NodeAttrs& a) { return NumberedOutputs(ParamsOf<CondParam>(a).num_outputs); })
      .set_attr<op::FInferShape>("FInferShape", CondInfer<Shape>)
      .set_attr<op::FInferType>("FInferType", CondInfer<DType>);
}

}  // namespace

TS_RUN_ON_REGISTRY_USE(RegisterControlFlowOps);

}  // namespace tessera::graph
