// Binding: the checked arrays, the full graph (forward outputs followed by
// the gradients of the arguments that want one), shapes and dtypes.
#include <algorithm>
#include <map>
#include <unordered_set>

#include "engine/base/env.h"
#include "engine/graph/control_flow.h"
#include "engine/graph/gradient.h"
#include "engine/graph/graph_executor.h"
#include "engine/graph/infer.h"

namespace tessera::graph {

namespace {

std::string NameList(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none" : s;
}

// How errors name an entry: a variable by its name, else "node:index".
std::string EntryName(const IndexedGraph& g, uint32_t nid, uint32_t index) {
  const Node& n = *g[nid].node;
  if (n.is_variable()) return "'" + n.attrs.name + "'";
  return "output " + std::to_string(index) + " of node '" + n.attrs.name + "' (" + n.op()->name() +
         ")";
}

}  // namespace

std::unique_ptr<Executor> Executor::Bind(const Symbol& sym, Context ctx, std::vector<NDArray> args,
                                         std::vector<NDArray> arg_grads,
                                         std::vector<OpReqType> grad_req, std::vector<NDArray> aux,
                                         const Executor* shared_exec) {
  static const std::vector<NDArray> kNone;
  return std::make_unique<GraphExecutor>(sym, ctx, std::move(args), std::move(arg_grads),
                                         std::move(grad_req), std::move(aux),
                                         shared_exec ? shared_exec->storage_blocks() : kNone);
}

GraphExecutor::GraphExecutor(const Symbol& sym, Context ctx, std::vector<NDArray> args,
                             std::vector<NDArray> arg_grads, std::vector<OpReqType> grad_req,
                             std::vector<NDArray> aux, const std::vector<NDArray>& shared_blocks)
    : sym_(sym),
      ctx_(ctx),
      args_(std::move(args)),
      grads_(std::move(arg_grads)),
      aux_(std::move(aux)),
      grad_req_(std::move(grad_req)) {
  TS_CHECK(!sym_.outputs.empty()) << "bind: the symbol is empty";
  const std::vector<std::string> arg_names = sym_.ListArguments();
  const std::vector<std::string> aux_names = sym_.ListAuxiliaryStates();
  const size_t n_args = arg_names.size();
  TS_CHECK(args_.size() == n_args) << "bind: " << args_.size() << " argument arrays given, the "
                                   << "symbol has " << n_args << " (" << NameList(arg_names) << ")";
  TS_CHECK(aux_.size() == aux_names.size())
      << "bind: " << aux_.size() << " auxiliary state arrays given, the symbol has "
      << aux_names.size() << " (" << NameList(aux_names) << ")";
  if (grads_.empty()) grads_.resize(n_args);
  TS_CHECK(grads_.size() == n_args) << "bind: " << grads_.size() << " gradient arrays for "
                                    << n_args << " arguments (" << NameList(arg_names) << ")";
  if (grad_req_.empty())
    for (const NDArray& g : grads_) grad_req_.push_back(g.is_none() ? kNullOp : kWriteTo);
  TS_CHECK(grad_req_.size() == n_args) << "bind: " << grad_req_.size() << " grad_req values for "
                                       << n_args << " arguments (" << NameList(arg_names) << ")";
  for (size_t i = 0; i < n_args; ++i) {
    const std::string& name = arg_names[i];
    TS_CHECK(!args_[i].is_none()) << "bind: argument '" << name << "' has no array";
    TS_CHECK(args_[i].ctx() == ctx_)
        << "bind: argument '" << name << "' is on " << args_[i].ctx().ToString()
        << ", the executor on " << ctx_.ToString();
    TS_CHECK(grad_req_[i] == kNullOp || grad_req_[i] == kWriteTo || grad_req_[i] == kAddTo)
        << "bind: grad_req of '" << name << "' is '" << OpReqName(grad_req_[i])
        << "'; use null, write or add";
    if (grad_req_[i] == kNullOp) continue;
    TS_CHECK(!grads_[i].is_none()) << "bind: argument '" << name << "' has grad_req '"
                                   << OpReqName(grad_req_[i]) << "' but no gradient array";
    TS_CHECK(grads_[i].ctx() == ctx_)
        << "bind: the gradient array of '" << name << "' is on " << grads_[i].ctx().ToString()
        << ", the executor on " << ctx_.ToString();
  }
  for (size_t i = 0; i < aux_.size(); ++i) {
    TS_CHECK(!aux_[i].is_none()) << "bind: auxiliary state '" << aux_names[i] << "' has no array";
    TS_CHECK(aux_[i].ctx() == ctx_)
        << "bind: auxiliary state '" << aux_names[i] << "' is on " << aux_[i].ctx().ToString()
        << ", the executor on " << ctx_.ToString();
  }

  ExpandControlFlowNodes();
  BuildGraph();
  InferShapesAndTypes();
  CheckBoundArrays();
  PlanAndAllocate(shared_blocks);
  ChooseLayouts();
  InitOps();
  set_bulk_size(int(std::max<int64_t>(1, EnvInt("TESSERA_EXEC_BULK_SIZE", 1))));
}

GraphExecutor::~GraphExecutor() = default;

// Control-flow nodes become ordinary ones, unrolled for the bound shapes;
// the arguments stay the same variable nodes.
void GraphExecutor::ExpandControlFlowNodes() {
  graph_outputs_ = sym_.outputs;
  if (!HasControlFlow(graph_outputs_)) return;
  const std::vector<NodePtr> arg_nodes = sym_.ListInputs(Symbol::InputKind::kArguments);
  const std::vector<NodePtr> aux_nodes = sym_.ListInputs(Symbol::InputKind::kAuxStates);
  auto seed = [&](const IndexedGraph& g, std::vector<Shape>* shapes, std::vector<DType>* types) {
    auto put = [&](const NodePtr& n, const NDArray& a) {
      if (!g.contains(n.get())) return;
      const uint32_t e = g.entry_id(g.node_id(n.get()), 0);
      (*shapes)[e] = a.shape();
      (*types)[e] = a.dtype();
    };
    for (size_t i = 0; i < arg_nodes.size(); ++i) put(arg_nodes[i], args_[i]);
    for (size_t i = 0; i < aux_nodes.size(); ++i) put(aux_nodes[i], aux_[i]);
  };
  try {
    graph_outputs_ = ExpandControlFlow(graph_outputs_, seed);
  } catch (const Error& e) {
    throw Error(std::string("bind: ") + e.what());
  }
}

void GraphExecutor::BuildGraph() {
  const std::vector<NodePtr> arg_nodes = sym_.ListInputs(Symbol::InputKind::kArguments);
  const std::vector<NodePtr> aux_nodes = sym_.ListInputs(Symbol::InputKind::kAuxStates);
  std::unordered_set<const Node*> forward;
  DFSVisit(graph_outputs_, [&](const NodePtr& n) { forward.insert(n.get()); });

  heads_ = graph_outputs_;
  std::vector<NodeEntry> xs;
  for (size_t i = 0; i < arg_nodes.size(); ++i)
    if (grad_req_[i] != kNullOp) {
      grad_args_.push_back(uint32_t(i));
      xs.push_back({arg_nodes[i], 0, 0});
    }
  if (!xs.empty()) {
    const std::vector<std::string> out_names = sym_.ListOutputs();
    std::vector<NodeEntry> head_grads;
    for (const std::string& name : out_names) {
      head_grad_nodes_.push_back(Node::Variable(name + "_head_grad"));
      head_grads.push_back({head_grad_nodes_.back(), 0, 0});
    }
    std::vector<NodeEntry> grads = Gradient(graph_outputs_, head_grads, xs);
    // A gradient is written straight into the user's array, so its entry
    // must belong to it alone: not a variable, not a forward value, not read
    // by another node, not the gradient of two arguments (add_n's rule, for
    // one, hands its output gradient to every input). Otherwise a copy.
    std::vector<NodeEntry> all = heads_;
    all.insert(all.end(), grads.begin(), grads.end());
    std::map<std::pair<const Node*, uint32_t>, int> uses;
    DFSVisit(all, [&](const NodePtr& n) {
      for (const NodeEntry& e : n->inputs) ++uses[{e.node.get(), e.index}];
    });
    for (const NodeEntry& g : grads) ++uses[{g.node.get(), g.index}];
    for (size_t k = 0; k < grads.size(); ++k) {
      NodeEntry& g = grads[k];
      if (!g.node->is_variable() && !forward.count(g.node.get()) &&
          uses[{g.node.get(), g.index}] == 1)
        continue;
      g = op::MakeNode("identity", arg_nodes[grad_args_[k]]->attrs.name + "_grad", {g});
    }
    heads_.insert(heads_.end(), grads.begin(), grads.end());
  }

  idx_ = std::make_unique<IndexedGraph>(heads_);
  const IndexedGraph& g = *idx_;
  for (const NodePtr& n : arg_nodes) arg_nids_.push_back(g.node_id(n.get()));
  for (const NodePtr& n : aux_nodes) aux_nids_.push_back(g.node_id(n.get()));
  is_forward_.assign(g.num_nodes(), false);
  for (uint32_t nid = 0; nid < g.num_nodes(); ++nid) {
    is_forward_[nid] = forward.count(g[nid].node.get()) != 0;
    if (g[nid].node->is_variable()) continue;
    (is_forward_[nid] ? forward_nodes_ : backward_nodes_).push_back(nid);
  }
}

void GraphExecutor::InferShapesAndTypes() {
  const IndexedGraph& g = *idx_;
  shapes_.assign(g.num_entries(), Shape());
  types_.assign(g.num_entries(), DType::kUnknown);
  for (size_t i = 0; i < args_.size(); ++i) {
    shapes_[g.entry_id(arg_nids_[i], 0)] = args_[i].shape();
    types_[g.entry_id(arg_nids_[i], 0)] = args_[i].dtype();
  }
  for (size_t i = 0; i < aux_.size(); ++i) {
    shapes_[g.entry_id(aux_nids_[i], 0)] = aux_[i].shape();
    types_[g.entry_id(aux_nids_[i], 0)] = aux_[i].dtype();
  }
  // A head gradient has its output's shape and dtype; the output is only
  // known after a first pass.
  auto seed_head_grads = [&](auto* values) {
    for (size_t i = 0; i < head_grad_nodes_.size(); ++i) {
      if (!g.contains(head_grad_nodes_[i].get())) continue;
      (*values)[g.entry_id(g.node_id(head_grad_nodes_[i].get()), 0)] =
          (*values)[g.entry_id(graph_outputs_[i])];
    }
  };
  try {
    if (InferShapes(g, &shapes_) != 0) {
      seed_head_grads(&shapes_);
      InferShapes(g, &shapes_);
    }
    if (InferTypes(g, &types_) != 0) {
      seed_head_grads(&types_);
      InferTypes(g, &types_);
    }
  } catch (const Error& e) {
    throw Error(std::string("bind: ") + e.what());  // the node and its inputs are named
  }
  std::vector<std::string> unknown;
  for (uint32_t nid = 0; nid < g.num_nodes() && unknown.size() < 8; ++nid)
    for (uint32_t o = 0; o < g[nid].node->num_outputs(); ++o) {
      const uint32_t e = g.entry_id(nid, o);
      if (!shapes_[e].known() || types_[e] == DType::kUnknown)
        unknown.push_back(
            EntryName(g, nid, o) + " " +
            (shapes_[e].known() ? std::string(DTypeName(types_[e])) : shapes_[e].ToString()));
    }
  TS_CHECK(unknown.empty()) << "bind: cannot infer the shape or dtype of " << NameList(unknown);
}

void GraphExecutor::CheckBoundArrays() const {
  const IndexedGraph& g = *idx_;
  const std::vector<std::string> arg_names = sym_.ListArguments();
  const std::vector<std::string> aux_names = sym_.ListAuxiliaryStates();
  auto check = [&](const NDArray& a, uint32_t nid, const std::string& what) {
    const uint32_t e = g.entry_id(nid, 0);
    TS_CHECK(a.shape() == shapes_[e] && a.dtype() == types_[e])
        << "bind: " << what << " has shape " << a.shape() << " " << DTypeName(a.dtype())
        << " but the symbol needs " << shapes_[e] << " " << DTypeName(types_[e]);
  };
  for (size_t i = 0; i < args_.size(); ++i) {
    check(args_[i], arg_nids_[i], "argument '" + arg_names[i] + "'");
    if (grad_req_[i] != kNullOp)
      check(grads_[i], arg_nids_[i], "the gradient array of '" + arg_names[i] + "'");
  }
  for (size_t i = 0; i < aux_.size(); ++i)
    check(aux_[i], aux_nids_[i], "auxiliary state '" + aux_names[i] + "'");
}

}  // namespace tessera::graph
