// The benchmark's peer for the dependency engine: the same PushSync(fn, reads,
// writes) contract built on oneTBB's flow graph, so that engine_bench can say
// how the engine compares with a mainstream task library doing the same job.
//
// Every pushed function becomes one continue_node. The node gets an edge from
// the last writer of each variable it reads, and, for each variable it writes,
// from every reader since that write (or from the last writer when there is
// none): the engine's rule, with readers of one version free to run together.
// Nodes live at least until WaitForAll, because flow-graph edges may only be
// made to and from live nodes.
//
// It is written to be a fair, efficient peer, not a toy:
// - like the engine's pooled op blocks, nodes are pooled: WaitForAll removes
//   the edges it made and keeps the nodes for later pushes, so at steady state
//   a push constructs no node and allocates only for the edges TBB records;
// - pushing is thread-safe like the engine's (per-variable spin locks taken in
//   address order, so two pushes naming the same variables cannot cross);
// - an edge is only made from a node that has not finished yet: a flow-graph
//   edge from a node that already broadcast would never deliver its message.
#pragma once

#include <oneapi/tbb/flow_graph.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

namespace tessera::bench {

class TbbFlowEngine {
 public:
  using Fn = std::function<void()>;
  struct Var;
  using VarHandle = Var*;

  TbbFlowEngine() = default;
  TbbFlowEngine(const TbbFlowEngine&) = delete;
  TbbFlowEngine& operator=(const TbbFlowEngine&) = delete;
  ~TbbFlowEngine() {
    WaitForAll();
    for (auto& seg : segments_) delete[] seg.load(std::memory_order_relaxed);
  }

  VarHandle NewVariable() { return new Var(); }
  // Only while nothing that names `var` is pending (the benchmark's use).
  void DeleteVariable(VarHandle var) { delete var; }

  void PushSync(Fn fn, std::span<const VarHandle> reads, std::span<const VarHandle> writes) {
    Op* op = AllocOp();
    op->fn = std::move(fn);
    op->done = false;
    // One phantom predecessor, satisfied by the try_put at the end, keeps the
    // node from firing while its real edges are still being made. The body
    // runs whatever function the op holds, so a pooled node serves any push.
    if (!op->node) {
      op->node.emplace(graph_, 1, [op](const tbb::flow::continue_msg&) {
        op->fn();
        op->Finish();
        return tbb::flow::continue_msg();
      });
    }

    // Lock every named variable at once, in address order, so that pushes
    // from two threads order themselves the same way on every shared
    // variable. One or two variables (every push here) need no sort buffer.
    VarHandle small[8];
    std::vector<VarHandle> large;
    VarHandle* locked = small;
    size_t n = reads.size() + writes.size();
    if (n > std::size(small)) {
      large.resize(n);
      locked = large.data();
    }
    std::copy(reads.begin(), reads.end(), locked);
    std::copy(writes.begin(), writes.end(), locked + reads.size());
    std::sort(locked, locked + n);
    n = std::unique(locked, locked + n) - locked;
    for (size_t i = 0; i < n; ++i) locked[i]->lock.Lock();

    const uint64_t epoch = epoch_;
    for (VarHandle v : reads) {
      v->Refresh(epoch);
      if (std::find(writes.begin(), writes.end(), v) != writes.end()) continue;
      if (v->last_writer != nullptr) Link(v->last_writer, op);
      v->readers.push_back(op);
    }
    for (VarHandle v : writes) {
      v->Refresh(epoch);
      if (v->last_writer == op) continue;  // named twice
      // Readers since the last write already come after that write, so
      // edges from them are enough; the writer itself only when there are none.
      bool after_readers = false;
      for (Op* r : v->readers) {
        if (r == op) continue;
        Link(r, op);
        after_readers = true;
      }
      if (!after_readers && v->last_writer != nullptr) Link(v->last_writer, op);
      v->readers.clear();
      v->last_writer = op;
    }

    for (size_t i = 0; i < n; ++i) locked[i]->lock.Unlock();
    op->node->try_put(tbb::flow::continue_msg());
  }

  // Waits for every pushed function, then returns the nodes to the pool.
  // Not concurrent with pushes.
  void WaitForAll() {
    graph_.wait_for_all();
    size_t count = std::min(next_op_.load(std::memory_order_relaxed), kMaxOps);
    for (size_t i = 0; i < count; ++i) {
      Op& op = OpAt(i);
      // Removing an edge also takes the predecessor back off the node's
      // count, which leaves it waiting for its phantom predecessor alone.
      for (Op* pred : op.preds) tbb::flow::remove_edge(*pred->node, *op.node);
      op.preds.clear();
      op.fn = nullptr;
    }
    next_op_.store(0, std::memory_order_relaxed);
    // Variables still point at ops of this round; a new epoch makes each one
    // forget them lazily, on its next use, instead of walking all of them now.
    ++epoch_;
  }

 private:
  class SpinLock {
   public:
    void Lock() {
      while (flag_.test_and_set(std::memory_order_acquire)) {
        while (flag_.test(std::memory_order_relaxed)) std::this_thread::yield();
      }
    }
    void Unlock() { flag_.clear(std::memory_order_release); }

   private:
    std::atomic_flag flag_;
  };

  using Node = tbb::flow::continue_node<tbb::flow::continue_msg>;
  // Cache-line aligned: a worker finishing one op would otherwise write to
  // the line where the pusher is building the next one's node.
  struct alignas(64) Op {
    std::optional<Node> node;  // built on first use, then kept
    Fn fn;
    std::vector<Op*> preds;  // edges into this node, to remove at WaitForAll
    // `done` is set by the body under `lock`, and edges are made under the
    // same lock only while it is clear: an edge made then is in place before
    // the node broadcasts, which happens after the body returns.
    SpinLock lock;
    bool done = false;
    void Finish() {
      lock.Lock();
      done = true;
      lock.Unlock();
    }
  };

 public:
  struct Var {
    SpinLock lock;
    uint64_t epoch = 0;
    Op* last_writer = nullptr;
    std::vector<Op*> readers;
    void Refresh(uint64_t now) {
      if (epoch == now) return;
      epoch = now;
      last_writer = nullptr;
      readers.clear();
    }
  };

 private:
  static void Link(Op* pred, Op* succ) {
    pred->lock.Lock();
    if (!pred->done) {
      tbb::flow::make_edge(*pred->node, *succ->node);
      succ->preds.push_back(pred);
    }
    pred->lock.Unlock();
  }

  // Ops live in fixed segments that are allocated once and reused across
  // WaitForAll calls, so pushing does not allocate op storage and a node
  // never moves (the graph and other nodes hold pointers to it).
  static constexpr size_t kSegmentBits = 14;
  static constexpr size_t kSegmentSize = size_t{1} << kSegmentBits;
  static constexpr size_t kMaxSegments = 1024;
  static constexpr size_t kMaxOps = kSegmentSize * kMaxSegments;

  Op* AllocOp() {
    size_t i = next_op_.fetch_add(1, std::memory_order_relaxed);
    if (i >= kMaxOps) std::abort();  // 16M ops between two WaitForAll calls
    return &OpAt(i);
  }
  Op& OpAt(size_t i) {
    std::atomic<Op*>& slot = segments_[i >> kSegmentBits];
    Op* seg = slot.load(std::memory_order_acquire);
    if (seg == nullptr) {
      std::lock_guard<std::mutex> lock(segment_mutex_);
      seg = slot.load(std::memory_order_relaxed);
      if (seg == nullptr) {
        seg = new Op[kSegmentSize];
        slot.store(seg, std::memory_order_release);
      }
    }
    return seg[i & (kSegmentSize - 1)];
  }

  tbb::flow::graph graph_;
  // On its own cache line: the graph's members next to it change with every
  // task that starts and ends, on the workers.
  alignas(64) std::atomic<size_t> next_op_{0};
  uint64_t epoch_ = 1;
  std::atomic<Op*> segments_[kMaxSegments] = {};
  std::mutex segment_mutex_;
};

}  // namespace tessera::bench
