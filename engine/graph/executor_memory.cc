// The executor's memory: which entries are the caller's arrays (external),
// the plan for the rest, and one storage block per storage id, each entry a
// view of its block. Entries sharing a block share its engine variable, so
// the engine's per-variable ordering is what keeps reuse safe.
#include <algorithm>
#include <limits>

#include "engine/base/array_bytes.h"
#include "engine/graph/graph_executor.h"

namespace tessera::graph {

namespace {

// (input, output) pairs the op allows in place, kept only where the two
// entries have one shape and dtype (broadcasting ops list pairs that only
// hold when no broadcasting happens).
std::vector<std::pair<uint32_t, uint32_t>> InplacePairs(const IndexedGraph& g, uint32_t nid,
                                                        const std::vector<Shape>& shapes,
                                                        const std::vector<DType>& types) {
  static const auto& finplace = op::Op::GetAttr<op::FInplaceOption>("FInplaceOption");
  const Node& n = *g[nid].node;
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  const op::FInplaceOption* f = finplace.find(n.op());
  if (!f) return pairs;
  for (auto [in, out] : (*f)(n.attrs)) {
    if (in < 0 || out < 0 || size_t(in) >= g[nid].inputs.size() || uint32_t(out) >= n.num_outputs())
      continue;
    const uint32_t ie = g.entry_id(g[nid].inputs[in]), oe = g.entry_id(nid, out);
    if (shapes[ie] == shapes[oe] && types[ie] == types[oe]) pairs.emplace_back(in, out);
  }
  return pairs;
}

// One block per storage id, taken from `shared` (another executor's blocks,
// which this one never runs beside) where it fits, largest first: a block
// nobody took yet, the smallest that holds it (its own engine variable, as
// a fresh block); failing that, the room left at the end of a taken block
// (64-byte aligned), best fit; failing that, a new block. Buckets of one
// network plan their storage differently, so the packing matters: without
// it a smaller bucket allocated about half the largest's again.
std::vector<NDArray> PlaceStorage(const std::vector<size_t>& bytes,
                                  const std::vector<NDArray>& shared, Context ctx) {
  constexpr size_t kAlign = 64;
  constexpr size_t kNone = std::numeric_limits<size_t>::max();
  std::vector<NDArray> out(bytes.size());
  std::vector<size_t> used(shared.size(), 0);
  std::vector<size_t> order(bytes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return bytes[a] > bytes[b]; });
  auto capacity = [&](size_t b) { return static_cast<size_t>(shared[b].shape()[0]); };
  for (size_t sid : order) {
    const size_t need = bytes[sid];
    size_t best = kNone, best_left = kNone;
    for (int pass = 0; pass < 2 && best == kNone && need > 0; ++pass)
      for (size_t b = 0; b < shared.size(); ++b) {
        if (!(shared[b].ctx() == ctx) || (pass == 0) != (used[b] == 0)) continue;
        const size_t cap = capacity(b);
        if (used[b] > cap || cap - used[b] < need) continue;
        if (cap - used[b] < best_left) best = b, best_left = cap - used[b];
      }
    if (best == kNone) {
      out[sid] = NDArray(Shape{int64_t(need)}, ctx, DType::kUint8);
      continue;
    }
    const size_t off = used[best];
    out[sid] = shared[best].Slice(int64_t(off), int64_t(off + need));
    used[best] = (off + need + kAlign - 1) / kAlign * kAlign;
  }
  return out;
}

}  // namespace

void GraphExecutor::PlanAndAllocate(const std::vector<NDArray>& shared_blocks) {
  const IndexedGraph& g = *idx_;
  const size_t n = g.num_entries();
  // Every entry is sized here once, before anything is allocated (inferred
  // shapes come from users, files and ops' shape functions): one too large
  // to exist is refused naming its node.
  std::vector<size_t> entry_bytes(n, 0);
  for (uint32_t nid = 0; nid < g.num_nodes(); ++nid)
    for (uint32_t o = 0; o < g[nid].node->num_outputs(); ++o) {
      const uint32_t e = g.entry_id(nid, o);
      if (!shapes_[e].known()) continue;
      entry_bytes[e] =
          ArrayBytes(shapes_[e], types_[e],
                     "bind: node '" + g[nid].node->attrs.name + "' output " + std::to_string(o));
    }
  external_.assign(n, false);
  entry_req_.assign(n, kWriteTo);
  entry_arrays_.assign(n, NDArray());

  // Variables: the caller's arrays, and the head gradients the executor keeps.
  for (size_t i = 0; i < args_.size(); ++i) entry_arrays_[g.entry_id(arg_nids_[i], 0)] = args_[i];
  for (size_t i = 0; i < aux_.size(); ++i) entry_arrays_[g.entry_id(aux_nids_[i], 0)] = aux_[i];
  head_grad_arrays_.assign(sym_.outputs.size(), NDArray());
  for (size_t i = 0; i < head_grad_nodes_.size(); ++i) {
    if (!g.contains(head_grad_nodes_[i].get())) continue;  // the output needs no gradient
    const uint32_t e = g.entry_id(g.node_id(head_grad_nodes_[i].get()), 0);
    head_grad_arrays_[i] = NDArray(shapes_[e], ctx_, types_[e]);
    entry_arrays_[e] = head_grad_arrays_[i];
  }
  for (uint32_t nid : g.input_nodes()) external_[g.entry_id(nid, 0)] = true;
  // Forward outputs stay readable after backward: storage of their own.
  outputs_.clear();
  for (const NodeEntry& out : graph_outputs_) {
    const uint32_t e = g.entry_id(out);
    if (entry_arrays_[e].is_none()) entry_arrays_[e] = NDArray(shapes_[e], ctx_, types_[e]);
    external_[e] = true;
    outputs_.push_back(entry_arrays_[e]);
  }
  // Gradients go straight into the caller's arrays, written or added to.
  for (size_t k = 0; k < grad_args_.size(); ++k) {
    const uint32_t e = g.entry_id(heads_[sym_.outputs.size() + k]);
    external_[e] = true;
    entry_arrays_[e] = grads_[grad_args_[k]];
    entry_req_[e] = grad_req_[grad_args_[k]];
  }

  PlanRequest req;
  req.external = external_;
  req.entry_bytes = std::move(entry_bytes);
  for (const auto* list : {&forward_nodes_, &backward_nodes_})
    for (uint32_t nid : *list) {
      PlanStep step;
      for (const auto& in : g[nid].inputs) step.inputs.push_back(g.entry_id(in));
      for (uint32_t o = 0; o < g[nid].node->num_outputs(); ++o)
        step.outputs.push_back(g.entry_id(nid, o));
      step.inplace = InplacePairs(g, nid, shapes_, types_);
      req.steps.push_back(std::move(step));
    }
  plan_ = PlanMemory(req);

  blocks_ = PlaceStorage(plan_.storage_bytes, shared_blocks, ctx_);
  for (size_t e = 0; e < n; ++e) {
    const int sid = plan_.storage_id[e];
    if (sid < 0) continue;
    entry_arrays_[e] = blocks_[sid].AsView(shapes_[e], types_[e]);
    entry_req_[e] = plan_.inplace[e] ? kWriteInplace : kWriteTo;
  }

  // A backward output that no node reads and nobody asked for (the gradient
  // of an input that needs none, as the data of a first layer) is not
  // computed: its kernel sees kNullOp. Its storage stays planned, so a
  // kernel that writes it anyway writes memory of its own.
  std::vector<bool> read(n, false);
  for (uint32_t nid = 0; nid < g.num_nodes(); ++nid)
    for (const auto& in : g[nid].inputs) read[g.entry_id(in)] = true;
  for (uint32_t nid : backward_nodes_)
    for (uint32_t o = 0; o < g[nid].node->num_outputs(); ++o) {
      const uint32_t e = g.entry_id(nid, o);
      if (!read[e] && !external_[e]) entry_req_[e] = kNullOp;
    }
}

size_t GraphExecutor::num_planned_entries() const {
  size_t count = 0;
  for (int sid : plan_.storage_id) count += sid >= 0;
  return count;
}

}  // namespace tessera::graph
