#include "engine/graph/plan_memory.h"

#include <cstdio>
#include <iterator>
#include <map>

#include "engine/base/error.h"

namespace tessera::graph {

namespace {

// Free blocks by size. Blocks only ever grow, and each is allocated once
// with its final size after planning, so growing a pooled block is free.
class BlockPool {
 public:
  BlockPool(const PlanRequest& req, std::vector<size_t>* sizes) : req_(req), sizes_(sizes) {}

  int Alloc(size_t bytes) {
    if (req_.allow_sharing && !free_.empty()) {
      // The smallest block that fits, unless it is far too big ...
      auto fit = free_.lower_bound(bytes);
      if (fit != free_.end() && fit->first / req_.match_range <= bytes) return Take(fit, bytes);
      // ... else the biggest smaller block, grown, unless it is far too small.
      if (fit != free_.begin()) {
        auto smaller = std::prev(fit);
        if (smaller->first * req_.match_range >= bytes) return Take(smaller, bytes);
      }
    }
    sizes_->push_back(bytes);
    return int(sizes_->size() - 1);
  }

  void Release(int sid) {
    if (req_.allow_sharing) free_.emplace((*sizes_)[sid], sid);
  }

 private:
  int Take(std::multimap<size_t, int>::iterator it, size_t bytes) {
    const int sid = it->second;
    free_.erase(it);
    if ((*sizes_)[sid] < bytes) (*sizes_)[sid] = bytes;
    return sid;
  }

  const PlanRequest& req_;
  std::vector<size_t>* sizes_;
  std::multimap<size_t, int> free_;
};

}  // namespace

MemoryPlan PlanMemory(const PlanRequest& req) {
  const size_t n = req.entry_bytes.size();
  TS_CHECK(req.external.size() == n)
      << "PlanMemory: " << req.external.size() << " external flags for " << n << " entries";
  TS_CHECK(req.match_range >= 1) << "PlanMemory: match_range must be at least 1";
  MemoryPlan plan;
  plan.storage_id.assign(n, MemoryPlan::kExternal);
  plan.inplace.assign(n, false);

  // Readers left per entry; an entry's block is released when it drops to 0.
  std::vector<uint32_t> refs(n, 0);
  for (const PlanStep& s : req.steps)
    for (uint32_t e : s.inputs) {
      TS_CHECK(e < n) << "PlanMemory: entry " << e << " out of range (" << n << " entries)";
      ++refs[e];
    }
  // Live entries holding each block: more than one only across an in-place hand-over.
  std::vector<uint32_t> holders;
  BlockPool pool(req, &plan.storage_bytes);
  auto release = [&](int sid) {
    if (--holders[sid] == 0) pool.Release(sid);
  };

  for (const PlanStep& s : req.steps) {
    std::vector<int> taken;  // blocks handed to an output of this step in place
    for (size_t o = 0; o < s.outputs.size(); ++o) {
      const uint32_t out = s.outputs[o];
      TS_CHECK(out < n) << "PlanMemory: entry " << out << " out of range (" << n << " entries)";
      TS_CHECK(plan.storage_id[out] == MemoryPlan::kExternal)
          << "PlanMemory: entry " << out << " is written by two steps";
      if (req.external[out]) continue;
      plan.unshared_bytes += req.entry_bytes[out];
      int sid = MemoryPlan::kExternal;
      if (req.allow_inplace) {
        for (auto [ip, op] : s.inplace) {
          if (op != o || ip >= s.inputs.size()) continue;
          const uint32_t in = s.inputs[ip];
          const int in_sid = plan.storage_id[in];
          if (req.external[in] || in_sid < 0 || req.entry_bytes[in] != req.entry_bytes[out])
            continue;
          // This step must be the input's last reader: nothing later may see
          // the value the output overwrites.
          size_t reads_here = 0;
          for (uint32_t e : s.inputs) reads_here += e == in;
          if (refs[in] != reads_here || holders[in_sid] != 1) continue;
          bool used = false;
          for (int t : taken) used |= t == in_sid;
          if (used) continue;
          sid = in_sid;
          plan.inplace[out] = true;
          taken.push_back(sid);
          break;
        }
      }
      if (sid < 0) {
        sid = pool.Alloc(req.entry_bytes[out]);
        if (holders.size() <= size_t(sid)) holders.resize(sid + 1, 0);
      }
      ++holders[sid];
      plan.storage_id[out] = sid;
    }
    // Inputs after outputs, so an output never lands on a block its own
    // step still reads (except in place, decided above).
    for (uint32_t e : s.inputs)
      if (--refs[e] == 0 && plan.storage_id[e] >= 0) release(plan.storage_id[e]);
    // Outputs nobody reads are still written; their blocks are free right after.
    for (uint32_t out : s.outputs)
      if (refs[out] == 0 && plan.storage_id[out] >= 0 && !req.external[out])
        release(plan.storage_id[out]);
  }
  for (size_t b : plan.storage_bytes) plan.planned_bytes += b;
  return plan;
}

std::string FormatBytes(size_t bytes) {
  char buf[32];
  if (bytes < 1024) {
    std::snprintf(buf, sizeof(buf), "%zu B", bytes);
  } else if (bytes < 1024 * 1024) {
    std::snprintf(buf, sizeof(buf), "%.1f KB", bytes / 1024.0);
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f MB", bytes / (1024.0 * 1024.0));
  }
  return buf;
}

}  // namespace tessera::graph
