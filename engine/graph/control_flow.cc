// Building control-flow nodes from bodies, and expanding them into ordinary
// nodes when a graph is bound (control_flow.h says what and why).
#include "engine/graph/control_flow.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "engine/graph/control_flow_params.h"
#include "engine/graph/infer.h"
#include "engine/graph/input_names.h"
#include "engine/op/param_value.h"

namespace tessera::graph {

using op::Subgraph;

namespace {

// ---- building ----

NodePtr OneVariable(const Symbol& s, const std::string& what) {
  TS_CHECK(s.outputs.size() == 1 && s.outputs[0].node && s.outputs[0].node->is_variable())
      << what << " must be a variable";
  return s.outputs[0].node;
}

NodeEntry OneEntry(const Symbol& s, const std::string& what) {
  TS_CHECK(s.outputs.size() == 1 && s.outputs[0].node)
      << what << " must be a symbol with one output, got " << s.outputs.size();
  return s.outputs[0];
}

// The bodies of one node, cut from the graph they were built in. Placeholder
// p (a variable) stands for node input p; every other value a body reads
// from outside becomes a variable of the subgraph and a further node input
// (`outer`), shared by the bodies that read it.
class BodyCutter {
 public:
  BodyCutter(std::string label, const std::vector<NodePtr>& placeholders)
      : label_(std::move(label)) {
    for (size_t i = 0; i < placeholders.size(); ++i) {
      TS_CHECK(placeholder_.emplace(placeholders[i].get(), i).second)
          << label_ << ": a placeholder variable is given twice";
    }
    num_placeholders_ = placeholders.size();
  }

  // Cuts `body` into a subgraph; returns it and, per subgraph input, the node
  // input that feeds it.
  std::shared_ptr<const Subgraph> Cut(const Symbol& body, std::vector<int64_t>* locs) {
    auto sg = std::make_shared<Subgraph>();
    DFSVisit(body.outputs, [&](const NodePtr& n) { Visit(n); });
    for (const NodeEntry& e : body.outputs) sg->outputs.push_back(Map(e));
    for (const NodePtr& v : SubgraphInputs(*sg)) {
      auto ph = placeholder_.find(v.get());
      if (ph != placeholder_.end()) {
        used_.insert(ph->second);
        locs->push_back(int64_t(ph->second));
      } else {
        locs->push_back(int64_t(num_placeholders_ + outer_index_.at(v.get())));
      }
    }
    return sg;
  }

  // The values read from outside, in the order of their node inputs.
  const std::vector<NodeEntry>& outer() const { return outer_; }
  bool used(size_t placeholder) const { return used_.count(placeholder) != 0; }

 private:
  void Visit(const NodePtr& n) {
    if (inside_.count(n.get()) || outside_.count(n.get())) return;
    bool in = placeholder_.count(n.get()) != 0;
    for (const NodeEntry& e : n->inputs) in = in || inside_.count(e.node.get()) != 0;
    for (const NodePtr& d : n->control_deps) in = in || inside_.count(d.get()) != 0;
    if (!in) {
      outside_.insert(n.get());
      return;
    }
    if (n->is_variable()) {
      inside_.emplace(n.get(), n);
      return;
    }
    TS_CHECK(MutableInputs(*n).empty())
        << label_ << ": node '" << n->attrs.name << "' (" << n->op()->name()
        << ") updates an auxiliary state, which a loop body cannot";
    NodePtr c = Node::Create();
    c->attrs = n->attrs;
    for (const NodeEntry& e : n->inputs) c->inputs.push_back(Map(e));
    for (const NodePtr& d : n->control_deps)
      if (auto it = inside_.find(d.get()); it != inside_.end())
        c->control_deps.push_back(it->second);
    inside_.emplace(n.get(), std::move(c));
  }

  // An entry of a body as the subgraph sees it.
  NodeEntry Map(const NodeEntry& e) {
    if (auto it = inside_.find(e.node.get()); it != inside_.end())
      return {it->second, e.index, e.version};
    // Read from outside: a variable is the same variable; another value gets
    // a variable named after it.
    const auto key = std::make_pair(e.node.get(), e.index);
    auto it = cut_.find(key);
    if (it == cut_.end()) {
      NodePtr v = e.node;
      if (!e.node->is_variable()) {
        const std::vector<std::string> outs = OutputNames(e.node->attrs);
        v = Node::Variable(e.node->attrs.name + "_" +
                           (e.index < outs.size() ? outs[e.index] : std::to_string(e.index)));
      }
      it = cut_.emplace(key, v).first;
      if (!outer_index_.count(v.get())) {
        outer_index_.emplace(v.get(), outer_.size());
        outer_.push_back(e.node->is_variable() ? NodeEntry{e.node, 0, e.version} : e);
      }
    }
    return {it->second, 0, 0};
  }

  std::string label_;
  size_t num_placeholders_ = 0;
  std::unordered_map<const Node*, size_t> placeholder_;
  std::unordered_map<const Node*, NodePtr> inside_;  // body node -> its copy
  std::unordered_set<const Node*> outside_;
  std::map<std::pair<const Node*, uint32_t>, NodePtr> cut_;  // outside value -> its variable
  std::unordered_map<const Node*, size_t> outer_index_;      // that variable -> outer_ index
  std::vector<NodeEntry> outer_;
  std::unordered_set<size_t> used_;
};

// As MXNet writes a Tuple parameter ("[0,2]"), so its files re-save alike.
std::string Locs(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

Symbol MakeNodeSymbol(const char* op_name, ParamDict params, std::vector<NodeEntry> inputs,
                      std::vector<std::shared_ptr<const Subgraph>> subgraphs, std::string name) {
  NodePtr n = Node::Create();
  n->attrs.name = name.empty() ? NewName(std::string(op_name).substr(1)) : std::move(name);
  n->attrs.dict = std::move(params);
  op::Op::Get(op_name)->ParseAttrs(&n->attrs);
  n->attrs.subgraphs = std::move(subgraphs);
  n->inputs = std::move(inputs);
  if (op_name == std::string_view("_foreach")) CheckForeach(n->attrs);
  if (op_name == std::string_view("_while_loop")) CheckWhileLoop(n->attrs);
  if (op_name == std::string_view("_cond")) CheckCond(n->attrs);
  Symbol s;
  for (uint32_t i = 0; i < n->num_outputs(); ++i) s.outputs.push_back({n, i, 0});
  return s;
}

}  // namespace

Symbol MakeForeach(const Symbol& body, size_t num_out_data, const std::vector<Symbol>& data_vars,
                   const std::vector<Symbol>& state_vars, const std::vector<Symbol>& data,
                   const std::vector<Symbol>& init_states, std::string name) {
  const std::string label = "foreach";
  TS_CHECK(!data.empty()) << label << ": needs at least one data symbol";
  TS_CHECK(data_vars.size() == data.size() && state_vars.size() == init_states.size())
      << label << ": " << data_vars.size() << " slice variables for " << data.size()
      << " data symbols, " << state_vars.size() << " state variables for " << init_states.size()
      << " states";
  TS_CHECK(body.outputs.size() == num_out_data + init_states.size())
      << label << ": the body gives " << body.outputs.size() << " outputs; expected "
      << num_out_data << " step outputs and " << init_states.size() << " states";
  std::vector<NodePtr> ph;
  std::vector<NodeEntry> inputs;
  for (size_t k = 0; k < data.size(); ++k) {
    ph.push_back(OneVariable(data_vars[k], label + ": slice variable " + std::to_string(k + 1)));
    inputs.push_back(OneEntry(data[k], label + ": data " + std::to_string(k + 1)));
  }
  for (size_t j = 0; j < init_states.size(); ++j) {
    ph.push_back(OneVariable(state_vars[j], label + ": state variable " + std::to_string(j + 1)));
    inputs.push_back(OneEntry(init_states[j], label + ": state " + std::to_string(j + 1)));
  }
  BodyCutter cut(label, ph);
  std::vector<int64_t> locs;
  auto sg = cut.Cut(body, &locs);
  for (size_t i = 0; i < ph.size(); ++i)
    TS_CHECK(cut.used(i)) << label << ": the body does not read "
                          << (i < data.size() ? "data " + std::to_string(i + 1)
                                              : "state " + std::to_string(i - data.size() + 1))
                          << "; every data array and state must take part in the computation";
  std::vector<int64_t> data_locs(data.size()), state_locs(init_states.size()), remain_locs;
  std::vector<std::pair<int64_t, int64_t>> remains;  // node input, body input
  for (size_t pos = 0; pos < locs.size(); ++pos) {
    const size_t in = size_t(locs[pos]);
    if (in < data.size()) {
      data_locs[in] = int64_t(pos);
    } else if (in < ph.size()) {
      state_locs[in - data.size()] = int64_t(pos);
    } else {
      remains.emplace_back(locs[pos], int64_t(pos));
    }
  }
  std::sort(remains.begin(), remains.end());
  for (const auto& r : remains) remain_locs.push_back(r.second);
  inputs.insert(inputs.end(), cut.outer().begin(), cut.outer().end());
  TS_DCHECK(remain_locs.size() == cut.outer().size());
  const ParamDict params{{"num_args", std::to_string(inputs.size() + 1)},
                         {"num_outputs", std::to_string(body.outputs.size())},
                         {"num_out_data", std::to_string(num_out_data)},
                         {"in_data_locs", Locs(data_locs)},
                         {"in_state_locs", Locs(state_locs)},
                         {"remain_locs", Locs(remain_locs)}};
  return MakeNodeSymbol("_foreach", params, std::move(inputs), {sg}, std::move(name));
}

Symbol MakeWhileLoop(const Symbol& cond, const Symbol& func, size_t num_out_data,
                     const std::vector<Symbol>& var_placeholders,
                     const std::vector<Symbol>& loop_vars, int64_t max_iterations,
                     std::string name) {
  const std::string label = "while_loop";
  TS_CHECK(!loop_vars.empty()) << label << ": needs at least one loop variable";
  TS_CHECK(var_placeholders.size() == loop_vars.size())
      << label << ": " << var_placeholders.size() << " placeholders for " << loop_vars.size()
      << " loop variables";
  TS_CHECK(max_iterations >= 1) << label << ": max_iterations must be at least 1, got "
                                << max_iterations;
  TS_CHECK(cond.outputs.size() == 1)
      << label << ": cond must give one symbol, got " << cond.outputs.size();
  TS_CHECK(func.outputs.size() == num_out_data + loop_vars.size())
      << label << ": func gives " << func.outputs.size() << " outputs; expected " << num_out_data
      << " step outputs and " << loop_vars.size() << " loop variables";
  std::vector<NodePtr> ph;
  std::vector<NodeEntry> inputs;
  for (size_t j = 0; j < loop_vars.size(); ++j) {
    ph.push_back(
        OneVariable(var_placeholders[j], label + ": placeholder " + std::to_string(j + 1)));
    inputs.push_back(OneEntry(loop_vars[j], label + ": loop variable " + std::to_string(j + 1)));
  }
  BodyCutter cut(label, ph);
  std::vector<int64_t> cond_locs, func_locs;
  auto cond_g = cut.Cut(cond, &cond_locs);
  auto func_g = cut.Cut(func, &func_locs);
  std::vector<int64_t> var_locs(loop_vars.size(), -1);
  for (size_t pos = 0; pos < func_locs.size(); ++pos)
    if (size_t(func_locs[pos]) < ph.size()) var_locs[size_t(func_locs[pos])] = int64_t(pos);
  for (size_t j = 0; j < ph.size(); ++j)
    TS_CHECK(var_locs[j] >= 0) << label << ": func does not read loop variable " << j + 1
                               << "; every loop variable must take part in the computation";
  inputs.insert(inputs.end(), cut.outer().begin(), cut.outer().end());
  const ParamDict params{{"num_args", std::to_string(inputs.size() + 2)},
                         {"num_outputs", std::to_string(func.outputs.size())},
                         {"num_out_data", std::to_string(num_out_data)},
                         {"max_iterations", std::to_string(max_iterations)},
                         {"cond_input_locs", Locs(cond_locs)},
                         {"func_input_locs", Locs(func_locs)},
                         {"func_var_locs", Locs(var_locs)}};
  return MakeNodeSymbol("_while_loop", params, std::move(inputs), {cond_g, func_g},
                        std::move(name));
}

Symbol MakeCond(const Symbol& pred, const Symbol& then_out, const Symbol& else_out,
                std::string name) {
  const std::string label = "cond";
  OneEntry(pred, label + ": pred");
  TS_CHECK(!then_out.outputs.empty() && then_out.outputs.size() == else_out.outputs.size())
      << label << ": then_func gives " << then_out.outputs.size() << " outputs, else_func "
      << else_out.outputs.size() << "; both must give the same number (at least one)";
  BodyCutter cut(label, {});
  std::vector<int64_t> cond_locs, then_locs, else_locs;
  auto cond_g = cut.Cut(pred, &cond_locs);
  auto then_g = cut.Cut(then_out, &then_locs);
  auto else_g = cut.Cut(else_out, &else_locs);
  const std::vector<NodeEntry> inputs = cut.outer();
  const ParamDict params{{"num_args", std::to_string(inputs.size() + 3)},
                         {"num_outputs", std::to_string(then_out.outputs.size())},
                         {"cond_input_locs", Locs(cond_locs)},
                         {"then_input_locs", Locs(then_locs)},
                         {"else_input_locs", Locs(else_locs)}};
  return MakeNodeSymbol("_cond", params, inputs, {cond_g, then_g, else_g}, std::move(name));
}

bool HasControlFlow(const std::vector<NodeEntry>& heads) {
  bool found = false;
  DFSVisit(heads, [&](const NodePtr& n) { found = found || IsControlFlowOp(n->op()); });
  return found;
}

namespace {

// ---- expanding ----

// A subgraph's nodes copied with its inputs replaced by `in` (one per
// subgraph input) and names prefixed; returns its outputs.
std::vector<NodeEntry> Inline(const Subgraph& sg, const std::vector<NodeEntry>& in,
                              const std::string& prefix) {
  const std::vector<NodePtr> vars = SubgraphInputs(sg);
  TS_DCHECK(vars.size() == in.size());
  std::unordered_map<const Node*, size_t> var_at;
  for (size_t i = 0; i < vars.size(); ++i) var_at.emplace(vars[i].get(), i);
  std::unordered_map<const Node*, NodePtr> copies;
  auto map = [&](const NodeEntry& e) -> NodeEntry {
    if (e.node->is_variable()) return in[var_at.at(e.node.get())];
    return {copies.at(e.node.get()), e.index, e.version};
  };
  DFSVisit(sg.outputs, [&](const NodePtr& n) {
    if (n->is_variable()) return;
    NodePtr c = Node::Create();
    c->attrs = n->attrs;
    c->attrs.name = prefix + n->attrs.name;
    for (const NodeEntry& e : n->inputs) c->inputs.push_back(map(e));
    for (const NodePtr& d : n->control_deps)
      if (!d->is_variable()) c->control_deps.push_back(copies.at(d.get()));
    copies.emplace(n.get(), std::move(c));
  });
  std::vector<NodeEntry> out;
  for (const NodeEntry& e : sg.outputs) out.push_back(map(e));
  return out;
}

NodeEntry Apply(const char* op, const std::string& name, std::vector<NodeEntry> in,
                ParamDict params = {}) {
  return op::MakeNode(op, name, std::move(in), std::move(params));
}

std::string Dims(const Shape& s) {
  return op::FormatValue(std::vector<int64_t>(s.begin(), s.begin() + s.ndim()));
}

// `flag` (one element, 0 or 1) broadcast to `shape` and used to pick x or y.
NodeEntry Select(const NodeEntry& flag, const NodeEntry& x, const NodeEntry& y, const Shape& shape,
                 const std::string& name) {
  const NodeEntry r =
      Apply("Reshape", name + "_flag", {flag}, {{"shape", Dims(Shape::Filled(shape.ndim(), 1))}});
  const NodeEntry m = Apply("broadcast_to", name + "_mask", {r}, {{"shape", Dims(shape)}});
  return Apply("where", name, {m, x, y});
}

// cond's value as a (1,) array of 0 or 1; more than one element is an error
// of Reshape's naming the node.
NodeEntry Flag(const NodeEntry& c, const std::string& name) {
  const NodeEntry r = Apply("Reshape", name + "_value", {c}, {{"shape", "(1,)"}});
  return Apply("_not_equal_scalar", name, {r}, {{"scalar", "0"}});
}

// A loop's outputs: each step output's values stacked along a new first
// axis, then the final states.
std::vector<NodeEntry> StackedThen(const std::string& base,
                                   const std::vector<std::vector<NodeEntry>>& steps_out,
                                   const std::vector<NodeEntry>& states) {
  std::vector<NodeEntry> result;
  for (size_t k = 0; k < steps_out.size(); ++k)
    result.push_back(Apply("stack", base + "_output" + std::to_string(k), steps_out[k],
                           {{"axis", "0"}, {"num_args", std::to_string(steps_out[k].size())}}));
  result.insert(result.end(), states.begin(), states.end());
  return result;
}

struct Known {
  const IndexedGraph& g;
  const std::vector<Shape>& shapes;
  const Node& node;
  Shape In(size_t i) const { return At(g.entry_id(node.inputs[i]), "input", i); }
  Shape Out(uint32_t k) const { return At(g.entry_id(g.node_id(&node), k), "output", k); }
  Shape At(uint32_t e, const char* what, size_t i) const {
    TS_CHECK(shapes[e].known()) << "node '" << node.attrs.name << "' (" << node.op()->name()
                                << "): cannot unroll it: the shape of its " << what << " " << i
                                << " is unknown (" << shapes[e] << ")";
    return shapes[e];
  }
};

std::vector<NodeEntry> ExpandForeach(const Node& n, const std::vector<NodeEntry>& in,
                                     const Known& known) {
  CheckForeach(n.attrs);
  const auto& p = op::ParamsOf<ForeachParam>(n.attrs);
  const Subgraph& body = *n.attrs.subgraphs[0];
  const size_t nd = p.in_data_locs.size(), ns = p.in_state_locs.size(),
               nod = size_t(p.num_out_data);
  const std::string& base = n.attrs.name;
  const int64_t steps = known.In(0)[0];
  std::vector<NodeEntry> split(nd);
  for (size_t k = 0; k < nd; ++k) {
    TS_CHECK(known.In(k)[0] == steps)
        << "node '" << base << "' (_foreach): data " << k << " has shape " << known.In(k)
        << ", data 0 " << steps << " steps";
    split[k] =
        Apply("split", base + "_data" + std::to_string(k), {in[k]},
              {{"num_outputs", std::to_string(steps)}, {"axis", "0"}, {"squeeze_axis", "1"}});
  }
  std::vector<NodeEntry> states(in.begin() + long(nd), in.begin() + long(nd + ns));
  std::vector<std::vector<NodeEntry>> steps_out(nod);
  std::vector<NodeEntry> sub(nd + ns + p.remain_locs.size());
  for (size_t r = 0; r < p.remain_locs.size(); ++r) sub[size_t(p.remain_locs[r])] = in[nd + ns + r];
  for (int64_t t = 0; t < steps; ++t) {
    for (size_t k = 0; k < nd; ++k)
      sub[size_t(p.in_data_locs[k])] = {split[k].node, uint32_t(t), 0};
    for (size_t j = 0; j < ns; ++j) sub[size_t(p.in_state_locs[j])] = states[j];
    const std::vector<NodeEntry> out = Inline(body, sub, base + "_t" + std::to_string(t) + "_");
    for (size_t k = 0; k < nod; ++k) steps_out[k].push_back(out[k]);
    for (size_t j = 0; j < ns; ++j) states[j] = out[nod + j];
  }
  return StackedThen(base, steps_out, states);
}

std::vector<NodeEntry> ExpandWhileLoop(const Node& n, const std::vector<NodeEntry>& in,
                                       const Known& known) {
  CheckWhileLoop(n.attrs);
  const auto& p = op::ParamsOf<WhileLoopParam>(n.attrs);
  const Subgraph& cond = *n.attrs.subgraphs[0];
  const Subgraph& func = *n.attrs.subgraphs[1];
  const size_t nod = size_t(p.num_out_data), nv = p.func_var_locs.size();
  const std::string& base = n.attrs.name;
  // Node input -> loop variable, for the inputs that hold one.
  std::unordered_map<size_t, size_t> var_of;
  std::vector<NodeEntry> vars(nv);
  std::vector<Shape> var_shape(nv), out_shape(nod);
  for (size_t j = 0; j < nv; ++j) {
    const size_t at = size_t(p.func_input_locs[size_t(p.func_var_locs[j])]);
    var_of.emplace(at, j);
    vars[j] = in[at];
    var_shape[j] = known.In(at);
  }
  for (size_t k = 0; k < nod; ++k) {
    const Shape s = known.Out(uint32_t(k));
    out_shape[k] = s.ndim() <= 1 ? Shape{1} : Shape(s.begin() + 1, s.begin() + s.ndim());
  }
  auto feed = [&](const std::vector<int64_t>& locs) {
    std::vector<NodeEntry> sub;
    for (int64_t l : locs) {
      auto v = var_of.find(size_t(l));
      sub.push_back(v != var_of.end() ? vars[v->second] : in[size_t(l)]);
    }
    return sub;
  };
  NodeEntry active;
  std::vector<std::vector<NodeEntry>> steps_out(nod);
  for (int64_t i = 0; i < p.max_iterations; ++i) {
    const std::string step = base + "_i" + std::to_string(i);
    const NodeEntry c = Inline(cond, feed(p.cond_input_locs), step + "_cond_")[0];
    const NodeEntry flag = Flag(c, step + "_flag");
    active = i == 0 ? flag : Apply("elemwise_mul", step + "_active", {active, flag});
    const std::vector<NodeEntry> out = Inline(func, feed(p.func_input_locs), step + "_");
    for (size_t k = 0; k < nod; ++k) {
      const NodeEntry zero = Apply("zeros_like", step + "_zero" + std::to_string(k), {out[k]});
      steps_out[k].push_back(
          Select(active, out[k], zero, out_shape[k], step + "_out" + std::to_string(k)));
    }
    for (size_t j = 0; j < nv; ++j)
      vars[j] =
          Select(active, out[nod + j], vars[j], var_shape[j], step + "_var" + std::to_string(j));
  }
  return StackedThen(base, steps_out, vars);
}

std::vector<NodeEntry> ExpandCond(const Node& n, const std::vector<NodeEntry>& in,
                                  const Known& known) {
  CheckCond(n.attrs);
  const auto& p = op::ParamsOf<CondParam>(n.attrs);
  const std::string& base = n.attrs.name;
  auto feed = [&](const std::vector<int64_t>& locs) {
    std::vector<NodeEntry> sub;
    for (int64_t l : locs) sub.push_back(in[size_t(l)]);
    return sub;
  };
  const NodeEntry c = Inline(*n.attrs.subgraphs[0], feed(p.cond_input_locs), base + "_cond_")[0];
  const NodeEntry flag = Flag(c, base + "_flag");
  const std::vector<NodeEntry> then_out =
      Inline(*n.attrs.subgraphs[1], feed(p.then_input_locs), base + "_then_");
  const std::vector<NodeEntry> else_out =
      Inline(*n.attrs.subgraphs[2], feed(p.else_input_locs), base + "_else_");
  std::vector<NodeEntry> result;
  for (size_t k = 0; k < then_out.size(); ++k)
    result.push_back(Select(flag, then_out[k], else_out[k], known.Out(uint32_t(k)),
                            base + "_output" + std::to_string(k)));
  return result;
}

}  // namespace

std::vector<NodeEntry> ExpandControlFlow(const std::vector<NodeEntry>& heads, const SeedFn& seed) {
  static const op::Op* const kForeach = op::Op::Get("_foreach");
  static const op::Op* const kWhile = op::Op::Get("_while_loop");
  std::vector<NodeEntry> cur = heads;
  // One round expands the outermost nodes; a nested one appears in the copies
  // and goes in the next round, once its shapes can be inferred.
  for (int round = 0; HasControlFlow(cur); ++round) {
    TS_CHECK(round < 64) << "bind: control flow nested more than 64 deep";
    const IndexedGraph g(cur);
    std::vector<Shape> shapes(g.num_entries());
    std::vector<DType> types(g.num_entries(), DType::kUnknown);
    seed(g, &shapes, &types);
    InferShapes(g, &shapes);
    InferTypes(g, &types);
    std::unordered_map<const Node*, std::vector<NodeEntry>> mapped;
    auto map = [&](const NodeEntry& e) -> NodeEntry {
      if (e.node->is_variable()) return e;
      const std::vector<NodeEntry>& outs = mapped.at(e.node.get());
      return outs[e.index];
    };
    for (uint32_t nid = 0; nid < g.num_nodes(); ++nid) {
      const NodePtr& node = g[nid].node;
      if (node->is_variable()) continue;
      std::vector<NodeEntry> in;
      bool changed = false;
      for (const NodeEntry& e : node->inputs) {
        in.push_back(map(e));
        changed = changed || in.back().node != e.node || in.back().index != e.index;
      }
      std::vector<NodeEntry>& outs = mapped[node.get()];
      if (IsControlFlowOp(node->op())) {
        const Known known{g, shapes, *node};
        outs = node->op() == kForeach ? ExpandForeach(*node, in, known)
               : node->op() == kWhile ? ExpandWhileLoop(*node, in, known)
                                      : ExpandCond(*node, in, known);
        continue;
      }
      std::vector<NodePtr> deps;
      for (const NodePtr& d : node->control_deps) {
        NodePtr m = d->is_variable() ? d : mapped.at(d.get()).at(0).node;
        changed = changed || m != d;
        deps.push_back(std::move(m));
      }
      NodePtr target = node;
      if (changed) {
        target = Node::Create();
        target->attrs = node->attrs;
        target->inputs = std::move(in);
        target->control_deps = std::move(deps);
      }
      for (uint32_t k = 0; k < node->num_outputs(); ++k) outs.push_back({target, k, 0});
    }
    for (NodeEntry& h : cur) h = map(h);
  }
  return cur;
}

}  // namespace tessera::graph
