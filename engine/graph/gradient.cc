#include "engine/graph/gradient.h"

#include <map>
#include <unordered_set>

#include "engine/graph/symbol.h"
#include "engine/op/op_attr_types.h"

namespace tessera::graph {

namespace {

using EntryKey = std::pair<const op::Node*, uint32_t>;

// One gradient from its contributions: the entry itself, or their sum.
NodeEntry Sum(std::vector<NodeEntry> parts, const std::string& name) {
  if (parts.size() == 1) return parts[0];
  return op::MakeNode("add_n", name, std::move(parts),
                      {{"num_args", std::to_string(parts.size())}});
}

}  // namespace

std::vector<NodeEntry> Gradient(const std::vector<NodeEntry>& ys,
                                const std::vector<NodeEntry>& head_grads,
                                const std::vector<NodeEntry>& xs) {
  TS_CHECK(ys.size() == head_grads.size())
      << "gradient: " << ys.size() << " outputs but " << head_grads.size() << " head gradients";
  std::vector<NodePtr> order;
  DFSVisit(ys, [&](const NodePtr& n) { order.push_back(n); });

  // Only nodes on a path from some x need their gradient rule run.
  std::unordered_set<const op::Node*> wanted;
  for (const NodeEntry& x : xs) wanted.insert(x.node.get());
  for (const NodePtr& n : order)
    for (const NodeEntry& e : n->inputs)
      if (wanted.count(e.node.get())) {
        wanted.insert(n.get());
        break;
      }

  std::map<EntryKey, std::vector<NodeEntry>> grads;
  for (size_t i = 0; i < ys.size(); ++i)
    grads[{ys[i].node.get(), ys[i].index}].push_back(head_grads[i]);

  static const auto& fgrad = op::Op::GetAttr<op::FGradient>("FGradient");
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const NodePtr& n = *it;
    if (n->is_variable() || !wanted.count(n.get())) continue;
    std::vector<NodeEntry> ograds;
    bool any = false;
    for (uint32_t o = 0; o < n->num_outputs(); ++o) {
      auto g = grads.find({n.get(), o});
      if (g == grads.end() || g->second.empty()) {
        ograds.push_back(op::MakeNode("zeros_like",
                                      n->attrs.name + "_out" + std::to_string(o) + "_zerograd",
                                      {NodeEntry{n, o, 0}}));
      } else {
        any = true;
        ograds.push_back(
            Sum(std::move(g->second), n->attrs.name + "_out" + std::to_string(o) + "_grad_sum"));
        g->second = {ograds.back()};
      }
    }
    if (!any) continue;
    const op::FGradient* f = fgrad.find(n->op());
    TS_CHECK(f) << "gradient: operator " << n->op()->name() << " (node '" << n->attrs.name
                << "') has no gradient (FGradient)";
    std::vector<NodeEntry> in_grads = (*f)(n, ograds);
    TS_CHECK(in_grads.size() == n->inputs.size())
        << "gradient: the rule of " << n->op()->name() << " gave " << in_grads.size()
        << " gradients for " << n->inputs.size() << " inputs";
    for (size_t i = 0; i < in_grads.size(); ++i) {
      const NodeEntry& in = n->inputs[i];
      if (wanted.count(in.node.get())) grads[{in.node.get(), in.index}].push_back(in_grads[i]);
    }
  }

  std::vector<NodeEntry> out;
  for (const NodeEntry& x : xs) {
    auto g = grads.find({x.node.get(), x.index});
    if (g == grads.end() || g->second.empty()) {
      out.push_back(op::MakeNode("zeros_like", x.node->attrs.name + "_zerograd", {x}));
    } else {
      out.push_back(Sum(g->second, x.node->attrs.name + "_grad_sum"));
    }
  }
  return out;
}

}  // namespace tessera::graph
