#include "engine/autograd/autograd.h"

#include <cctype>
#include <map>
#include <set>
#include <unordered_map>

#include "engine/graph/gradient.h"
#include "engine/ndarray/imperative.h"
#include "engine/op/op_attr_types.h"

namespace tessera::autograd {

using graph::NodeEntry;
using graph::NodePtr;
using op::Node;

namespace {

// What autograd keeps on a recorded node (Node::info).
struct AGInfo {
  std::vector<NDArray> outputs;  // the values recorded (variables: the array itself)
  NDArray grad;                  // variables with attach_grad: the buffer
  OpReqType req = kNullOp;
  bool freed = false;  // outputs released by a backward without retain_graph
};

AGInfo* Info(const Node& n) {
  return static_cast<AGInfo*>(n.info.get());
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Names get their own "ag" hints, so recording never shifts the automatic
// names of symbols built later.
NodePtr ConstantNode(const NDArray& value) {
  NodePtr n = Node::Variable(graph::NewName("ag_const"));
  auto info = std::make_shared<AGInfo>();
  info->outputs = {value.Detach()};
  n->info = info;
  return n;
}

void Record(const std::shared_ptr<const op::NodeAttrs>& attrs, const std::vector<NDArray>& inputs,
            std::vector<NDArray>* outputs) {
  bool tracked = false;
  for (const NDArray& in : inputs) tracked = tracked || in.ag_node() != nullptr;
  if (!tracked) return;  // nothing to differentiate with respect to
  NodePtr n = Node::Create();
  n->attrs = *attrs;
  n->attrs.name = graph::NewName("ag_" + Lower(attrs->op->name()));
  for (const NDArray& in : inputs)
    n->inputs.push_back(in.ag_node() ? NodeEntry{in.ag_node(), in.ag_index(), 0}
                                     : NodeEntry{ConstantNode(in), 0, 0});
  auto info = std::make_shared<AGInfo>();
  for (const NDArray& out : *outputs) info->outputs.push_back(out.Detach());
  n->info = info;
  for (size_t i = 0; i < outputs->size(); ++i)
    (*outputs)[i].set_ag_entry(n, static_cast<uint32_t>(i));
}

[[maybe_unused]] const bool kHookSet = (SetRecordHook(Record), true);

// The arrays a gradient node writes when one of its outputs is a variable's
// final gradient (write request): that variable's own buffer there, so no
// copy follows, and new arrays of the inferred shapes and dtypes elsewhere.
// Empty when the op cannot tell its output shapes and dtypes from its inputs.
std::vector<NDArray> OutputsInto(const NodePtr& n, const std::vector<NDArray>& in,
                                 const std::vector<NDArray>& into) {
  static const auto& fshape = op::Op::GetAttr<op::FInferShape>("FInferShape");
  static const auto& ftype = op::Op::GetAttr<op::FInferType>("FInferType");
  const op::FInferShape* shape_fn = fshape.find(n->op());
  const op::FInferType* type_fn = ftype.find(n->op());
  if (!shape_fn || !type_fn || in.empty()) return {};
  std::vector<Shape> in_shapes, out_shapes(into.size());
  std::vector<DType> in_types, out_types(into.size(), DType::kUnknown);
  for (const NDArray& a : in) {
    in_shapes.push_back(a.shape());
    in_types.push_back(a.dtype());
  }
  if (!(*shape_fn)(n->attrs, &in_shapes, &out_shapes) ||
      !(*type_fn)(n->attrs, &in_types, &out_types))
    return {};
  const Context ctx = in[0].ctx();
  std::vector<NDArray> out;
  for (size_t o = 0; o < into.size(); ++o) {
    if (!into[o].is_none()) {
      if (into[o].shape() != out_shapes[o] || into[o].dtype() != out_types[o] ||
          into[o].ctx() != ctx)
        return {};
      out.push_back(into[o]);
    } else {
      out.emplace_back(out_shapes[o], ctx, out_types[o]);
    }
  }
  return out;
}

// Restores the recording flag on scope exit (backward never records).
struct PauseRecording {
  bool before = SetRecording(false);
  ~PauseRecording() { SetRecording(before); }
};

}  // namespace

bool IsRecording() {
  return ThreadRecordState().recording;
}
bool IsTraining() {
  return ThreadRecordState().training;
}
bool SetRecording(bool on) {
  return std::exchange(ThreadRecordState().recording, on);
}
bool SetTraining(bool on) {
  return std::exchange(ThreadRecordState().training, on);
}

void RecordCall(const std::shared_ptr<const op::NodeAttrs>& attrs,
                const std::vector<NDArray>& inputs, std::vector<NDArray>* outputs) {
  if (IsRecording()) Record(attrs, inputs, outputs);
}

namespace {

bool RecordsViewOf(const NDArray& a) {
  return IsRecording() && a.ag_node() != nullptr;
}

NDArray RecordView(NDArray view, std::string_view op_name, op::ParamDict params,
                   const NDArray& from) {
  std::vector<NDArray> out{std::move(view)};
  Record(MakeAttrs(op_name, std::move(params)), {from}, &out);
  return out[0];
}

NDArray RecordedSlice(const NDArray& a, int64_t begin, int64_t end) {
  return RecordView(a.Slice(begin, end), "slice_axis",
                    {{"axis", "0"}, {"begin", std::to_string(begin)}, {"end", std::to_string(end)}},
                    a);
}

}  // namespace

NDArray ReshapeWithRecord(const NDArray& a, const std::vector<int64_t>& spec) {
  NDArray view = a.Reshape(spec);
  if (!RecordsViewOf(a)) return view;
  std::string shape = view.shape().ToString();
  return RecordView(std::move(view), "Reshape", {{"shape", std::move(shape)}}, a);
}

NDArray SliceWithRecord(const NDArray& a, int64_t begin, int64_t end) {
  if (!RecordsViewOf(a)) return a.Slice(begin, end);
  return RecordedSlice(a, begin, end);
}

NDArray AtWithRecord(const NDArray& a, int64_t index) {
  NDArray view = a.At(index);
  if (!RecordsViewOf(a)) return view;
  const NDArray row = RecordedSlice(a, index, index + 1);
  if (row.shape() == view.shape()) return row;  // 1-D: At keeps the axis
  std::string shape = view.shape().ToString();
  return RecordView(row.Reshape(view.shape()), "Reshape", {{"shape", std::move(shape)}}, row);
}

NDArray AttachGrad(NDArray* x, OpReqType req) {
  TS_CHECK(x && !x->is_none()) << "attach_grad: the array is empty (none)";
  TS_CHECK(req == kWriteTo || req == kAddTo || req == kNullOp)
      << "attach_grad: grad_req must be 'write', 'add' or 'null'";
  PauseRecording pause;
  NodePtr n = Node::Variable(graph::NewName("ag_var"));
  auto info = std::make_shared<AGInfo>();
  info->outputs = {x->Detach()};
  info->grad = Invoke("zeros_like", {x->Detach()})[0];
  info->req = req;
  n->info = info;
  x->set_ag_entry(n, 0);
  return info->grad;
}

NDArray GetGrad(const NDArray& x) {
  const Node* n = x.ag_node().get();
  if (!n || !n->is_variable() || !Info(*n)) return NDArray();
  return Info(*n)->grad;
}

OpReqType GetGradReq(const NDArray& x) {
  const Node* n = x.ag_node().get();
  if (!n || !n->is_variable() || !Info(*n) || Info(*n)->grad.is_none()) return kNullOp;
  return Info(*n)->req;
}

namespace {

using EntryReads = std::map<std::pair<const Node*, uint32_t>, int>;
using Values = std::unordered_map<const Node*, std::vector<NDArray>>;

// The inputs of n that this call reads for the last time and that backward
// alone holds (an output of an earlier backward node, named once among n's
// inputs, its memory shared with no other array): the bits of
// InvokeOptions::donated. `in` holds n's input values. An entry n reads
// twice has two reads left here, so it is never given.
uint64_t LastReads(const Node& n, const std::set<const Node*>& owned, const EntryReads& reads_left,
                   const std::vector<NDArray>& in) {
  uint64_t bits = 0;
  for (size_t k = 0; k < n.inputs.size() && k < 64; ++k) {
    const NodeEntry& e = n.inputs[k];
    if (!owned.count(e.node.get()) || reads_left.at({e.node.get(), e.index}) != 1) continue;
    // Held twice: by `values` and by `in`.
    if (in[k].is_none() || in[k].chunk().use_count() != 2) continue;
    bits |= uint64_t{1} << k;
  }
  return bits;
}

// Counts n's reads done; an owned array read for the last time is let go.
void ReleaseRead(const Node& n, const std::set<const Node*>& owned, EntryReads* reads_left,
                 Values* values) {
  for (const NodeEntry& e : n.inputs) {
    if (--reads_left->at({e.node.get(), e.index}) != 0 || !owned.count(e.node.get())) continue;
    (*values)[e.node.get()].at(e.index) = NDArray();
  }
}

}  // namespace

void Backward(const std::vector<NDArray>& heads, const std::vector<NDArray>& head_grads,
              bool retain_graph, bool is_train) {
  TS_CHECK(!heads.empty()) << "backward: no arrays given";
  TS_CHECK(head_grads.empty() || head_grads.size() == heads.size())
      << "backward: " << heads.size() << " heads but " << head_grads.size() << " head gradients";
  PauseRecording pause;
  std::vector<NodeEntry> ys;
  for (size_t i = 0; i < heads.size(); ++i) {
    TS_CHECK(heads[i].ag_node())
        << "backward: head " << i + 1
        << " was not computed under mx.autograd.record from an array with attach_grad";
    ys.push_back({heads[i].ag_node(), heads[i].ag_index(), 0});
  }

  std::vector<NodePtr> recorded;
  std::vector<NodeEntry> xs;
  graph::DFSVisit(ys, [&](const NodePtr& n) {
    const AGInfo* info = Info(*n);
    TS_CHECK(info) << "backward: node '" << n->attrs.name << "' was not recorded";
    TS_CHECK(!info->freed) << "backward: the recorded graph was freed by an earlier backward; "
                              "pass retain_graph = true to that backward to run it again";
    recorded.push_back(n);
    if (n->is_variable() && info->req != kNullOp && !info->grad.is_none()) xs.push_back({n, 0, 0});
  });
  TS_CHECK(!xs.empty()) << "backward: none of the arrays this depends on has a gradient buffer "
                           "(call x:attach_grad() before recording)";

  Values values;
  std::vector<NodeEntry> hg;
  for (size_t i = 0; i < heads.size(); ++i) {
    NodePtr v = Node::Variable("head_grad" + std::to_string(i));
    NDArray g = head_grads.empty() ? NDArray() : head_grads[i];
    if (g.is_none()) {
      g = Invoke("ones_like", {heads[i].Detach()})[0];
    } else {
      TS_CHECK(g.shape() == heads[i].shape() && g.dtype() == heads[i].dtype())
          << "backward: head gradient " << i + 1 << " is " << DTypeName(g.dtype()) << " "
          << g.shape() << ", the head is " << DTypeName(heads[i].dtype()) << " "
          << heads[i].shape();
    }
    values[v.get()] = {g.Detach()};
    hg.push_back({v, 0, 0});
  }
  const std::vector<NodeEntry> grads = graph::Gradient(ys, hg, xs);

  auto value_of = [&](const NodeEntry& e) -> const NDArray& {
    if (const AGInfo* info = Info(*e.node)) return info->outputs.at(e.index);
    return values.at(e.node.get()).at(e.index);
  };
  // The gradient nodes' outputs that something reads; the others are not
  // computed (kNullOp): the gradient of a first layer's data, of a label.
  std::set<std::pair<const Node*, uint32_t>> read;
  for (const NodeEntry& g : grads) read.emplace(g.node.get(), g.index);
  graph::DFSVisit(grads, [&](const NodePtr& n) {
    for (const NodeEntry& e : n->inputs) read.emplace(e.node.get(), e.index);
  });
  // Outputs that are a variable's whole gradient, written into its buffer.
  std::map<std::pair<const Node*, uint32_t>, NDArray> into_buffer;
  for (size_t k = 0; k < xs.size(); ++k) {
    const AGInfo& info = *Info(*xs[k].node);
    if (info.req == kWriteTo && !Info(*grads[k].node))
      into_buffer.emplace(std::make_pair(grads[k].node.get(), grads[k].index), info.grad);
  }

  // Reads still to come of each gradient node's outputs: at its last read an
  // array that backward alone made and holds is given to the op (written in
  // place where the op allows, as the executor's memory plan does), then let
  // go, so backward's memory stays near its live set. The gradients asked
  // for are read once more at the end (the same entry once per request),
  // after every op, so no op's read is their last and they are never given up.
  EntryReads reads_left;
  graph::DFSVisit(grads, [&](const NodePtr& n) {
    for (const NodeEntry& e : n->inputs) ++reads_left[{e.node.get(), e.index}];
  });
  for (const NodeEntry& g : grads) ++reads_left[{g.node.get(), g.index}];
  std::set<const Node*> owned;  // nodes whose outputs backward made with Invoke

  static const auto& on_caller = op::Op::GetAttr<FInvokeOnCaller>("FInvokeOnCaller");
  graph::DFSVisit(grads, [&](const NodePtr& n) {
    if (Info(*n) || values.count(n.get())) return;
    TS_CHECK(!n->is_variable()) << "backward: unbound variable '" << n->attrs.name << "'";
    std::vector<NDArray> in;
    for (const NodeEntry& e : n->inputs) in.push_back(value_of(e));
    if (const FInvokeOnCaller* f = on_caller.find(n->op())) {
      values[n.get()] = (*f)(n->attrs, in);
      return;
    }
    InvokeOptions opt;
    opt.is_train = is_train;
    opt.donated = LastReads(*n, owned, reads_left, in);
    const uint32_t n_out = n->num_outputs();
    bool all_read = true;
    for (uint32_t o = 0; o < n_out; ++o) all_read = all_read && read.count({n.get(), o});
    if (!all_read)
      for (uint32_t o = 0; o < n_out; ++o)
        opt.req.push_back(read.count({n.get(), o}) ? kWriteTo : kNullOp);
    std::vector<NDArray> out;
    std::vector<NDArray> into(n_out);
    bool any_into = false;
    for (uint32_t o = 0; o < n_out; ++o) {
      auto it = into_buffer.find({n.get(), o});
      if (it == into_buffer.end()) continue;
      into[o] = it->second;
      any_into = true;
    }
    if (any_into) {
      out = OutputsInto(n, in, into);
      opt.donated = 0;
    }
    Invoke(std::make_shared<op::NodeAttrs>(n->attrs), in, &out, opt);
    values[n.get()] = std::move(out);
    if (!any_into) owned.insert(n.get());
    in.clear();
    ReleaseRead(*n, owned, &reads_left, &values);
  });

  for (size_t k = 0; k < xs.size(); ++k) {
    AGInfo& info = *Info(*xs[k].node);
    const NDArray& g = value_of(grads[k]);
    const bool in_place = g.var() == info.grad.var() && g.byte_offset() == info.grad.byte_offset();
    TS_DCHECK(!in_place || info.req == kWriteTo);
    if (in_place) continue;  // written into the buffer by its node (a CachedOp's executor)
    std::vector<NDArray> out{info.grad};
    if (info.req == kAddTo)
      Invoke(MakeAttrs("elemwise_add"), {info.grad, g}, &out);
    else
      CopyFromTo(g, info.grad);
  }
  if (retain_graph) return;
  for (const NodePtr& n : recorded) {
    AGInfo& info = *Info(*n);
    if (n->is_variable() && !info.grad.is_none()) continue;  // attached arrays stay usable
    info.outputs.clear();
    info.freed = true;
  }
}

graph::Symbol GetSymbol(const NDArray& y) {
  TS_CHECK(y.ag_node()) << "get_symbol: the array was not computed under mx.autograd.record";
  return graph::Symbol{{{y.ag_node(), y.ag_index(), 0}}};
}

}  // namespace tessera::autograd
