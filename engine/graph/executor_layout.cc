// Which planned arrays stay in oneDNN's channel-blocked layout between ops
// (MemLayout::kNChw16c), as MXNet's MKLDNN arrays do: a convolution's output
// read by a BatchNorm, an activation and the next convolution is reordered
// into and out of the blocked layout at every op otherwise, which costs a
// ResNet a fifth of its convolution time on CPU.
//
// The choice is made once, at bind, over the whole graph (forward and
// gradient): entries tied to one layout by an op (FLayoutClasses: every
// array of an elementwise op; arrays of one class; an in-place pair) form a
// group, and a group is blocked only where every one of its entries can be:
// planned inside the executor (not an argument, auxiliary state, output or
// gradient the caller holds), a 4-D float32 array whose channels are a
// multiple of 16, and read and written only by ops that accept the blocked
// layout for it. An array of one position per channel is the same bytes in
// both layouts: it stays row-major and ties nothing (kernels that take
// blocked arrays read it as either). Everything the caller sees stays row-major; a monitor
// callback gets row-major copies.
#include <atomic>
#include <numeric>

#include "engine/base/env.h"
#include "engine/graph/graph_executor.h"
#include "engine/scheduler/engine.h"

namespace tessera::graph {

namespace {

class UnionFind {
 public:
  explicit UnionFind(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0u); }
  uint32_t Find(uint32_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void Join(uint32_t a, uint32_t b) { parent_[Find(a)] = Find(b); }

 private:
  std::vector<uint32_t> parent_;
};

bool BlockableShape(const Shape& s, DType t) {
  return t == DType::kFloat32 && s.ndim() == 4 && s[1] > 0 && s[1] % 16 == 0 && s.Size() > 0;
}

// One position per channel: the blocked order is the row-major one, so the
// array constrains no group (a global pooling's output read by Flatten).
bool SameEitherWay(const Shape& s, DType t) {
  return BlockableShape(s, t) && s[2] * s[3] == 1;
}

}  // namespace

namespace {
// -1: follow the environment; otherwise set by SetBlockedLayout.
std::atomic<int> g_blocked{-1};
}  // namespace

bool BlockedLayoutEnabled() {
  const int set = g_blocked.load(std::memory_order_relaxed);
  if (set >= 0) return set != 0;
  static const bool from_env = EnvBool("TESSERA_BLOCKED_LAYOUT", true);
  return from_env;
}

bool SetBlockedLayout(bool on) {
  const bool old = BlockedLayoutEnabled();
  g_blocked.store(on ? 1 : 0, std::memory_order_relaxed);
  return old;
}

void GraphExecutor::ChooseLayouts() {
  using op::Op;
  const IndexedGraph& g = *idx_;
  const size_t n = g.num_entries();
  layouts_.assign(n, MemLayout::kRowMajor);
  if (!ctx_.is_cpu() || !BlockedLayoutEnabled()) return;
  static const auto& classes_of = Op::GetAttr<op::FLayoutClasses>("FLayoutClasses");
  static const auto& inplace_of = Op::GetAttr<op::FInplaceOption>("FInplaceOption");

  std::vector<bool> ok(n);
  for (size_t e = 0; e < n; ++e)
    ok[e] = !external_[e] && plan_.storage_id[e] >= 0 && BlockableShape(shapes_[e], types_[e]);
  UnionFind groups(n);
  for (uint32_t nid = 0; nid < g.num_nodes(); ++nid) {
    const auto& info = g[nid];
    if (info.node->is_variable()) continue;
    const Op* op = info.node->op();
    std::vector<uint32_t> ins, outs;
    std::vector<Shape> in_shapes;
    for (const auto& in : info.inputs) {
      ins.push_back(g.entry_id(in));
      in_shapes.push_back(shapes_[ins.back()]);
    }
    for (uint32_t o = 0; o < info.node->num_outputs(); ++o) outs.push_back(g.entry_id(nid, o));
    const op::LayoutClasses c =
        classes_of.contains(op) ? classes_of[op](info.node->attrs, in_shapes) : op::LayoutClasses{};
    // class k > 0 -> the first entry seen of that class
    std::vector<std::pair<int, uint32_t>> first;
    auto place = [&](uint32_t e, int cls) {
      if (SameEitherWay(shapes_[e], types_[e])) return;
      if (c.elementwise) cls = 1;
      if (cls == op::kLayoutPlain) {
        ok[e] = false;
        return;
      }
      if (cls == op::kLayoutFree) return;
      for (const auto& [k, e0] : first)
        if (k == cls) return groups.Join(e, e0);
      first.emplace_back(cls, e);
    };
    for (size_t i = 0; i < ins.size(); ++i)
      place(ins[i], i < c.in.size() ? c.in[i] : op::kLayoutPlain);
    for (size_t o = 0; o < outs.size(); ++o)
      place(outs[o], o < c.out.size() ? c.out[o] : op::kLayoutPlain);
    // Memory shared in place holds one layout.
    if (inplace_of.contains(op))
      for (const auto& [i, o] : inplace_of[op](info.node->attrs))
        if (size_t(i) < ins.size() && size_t(o) < outs.size()) groups.Join(ins[i], outs[o]);
  }
  std::vector<bool> group_ok(n, true);
  for (uint32_t e = 0; e < n; ++e)
    if (!ok[e]) group_ok[groups.Find(e)] = false;
  for (uint32_t e = 0; e < n; ++e)
    if (group_ok[groups.Find(e)] && ok[e] && !SameEitherWay(shapes_[e], types_[e]))
      layouts_[e] = MemLayout::kNChw16c;
}

size_t GraphExecutor::num_blocked_entries() const {
  size_t count = 0;
  for (MemLayout l : layouts_) count += l == MemLayout::kNChw16c;
  return count;
}

// The array of entry `e` as the caller may read it: itself, or a row-major
// copy made on the engine after the entry's writer.
NDArray GraphExecutor::RowMajorArray(uint32_t e) const {
  const NDArray& a = entry_arrays_[e];
  if (layouts_.empty() || layouts_[e] == MemLayout::kRowMajor) return a;
  NDArray plain(a.shape(), a.ctx(), a.dtype());
  const TBlob from = a.data(), to = plain.data();
  engine::Engine::Get()->PushSync(
      [from, to, keep = a, keep2 = plain](RunContext) {
        const Shape& s = from.shape();
        const int64_t nb = s[0], c = s[1], hw = s[2] * s[3];
        const float* src = static_cast<const float*>(from.dptr_);
        float* dst = static_cast<float*>(to.dptr_);
        for (int64_t i = 0; i < nb; ++i)
          for (int64_t ch = 0; ch < c; ++ch) {
            const float* blk = src + ((i * (c / 16) + ch / 16) * hw) * 16 + ch % 16;
            float* row = dst + (i * c + ch) * hw;
            for (int64_t p = 0; p < hw; ++p) row[p] = blk[p * 16];
          }
      },
      ctx_, {a.var()}, {plain.var()}, engine::FnProperty::kNormal, 0, "RowMajorCopy");
  return plain;
}

}  // namespace tessera::graph
