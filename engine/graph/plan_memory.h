// Memory planning: which intermediate values of a graph share storage.
//
// The planner sees the graph only as steps in execution order, each reading
// and writing entries (numbered values) of known byte sizes, so it can be
// tested on made-up graphs and knows nothing about ops or devices. Two ideas,
// as in MXNet's PlanMemory pass:
//   - in place: an output takes its input's block when the op allows the pair
//     (FInplaceOption), the sizes match, the input is planned, and this step
//     is its last reader;
//   - liveness sharing: a block returns to a pool after the last reader of
//     the entry holding it, and later entries take pooled blocks (best fit,
//     a smaller block is grown rather than opening a new one).
// External entries (arguments, user gradient arrays, outputs the caller
// keeps) are not planned and never share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tessera::graph {

struct PlanStep {
  std::vector<uint32_t> inputs;   // entries read (repeats allowed)
  std::vector<uint32_t> outputs;  // entries written
  // (input position, output position) pairs that may share memory.
  std::vector<std::pair<uint32_t, uint32_t>> inplace;
};

struct PlanRequest {
  std::vector<size_t> entry_bytes;  // per entry
  std::vector<bool> external;       // per entry: not planned
  std::vector<PlanStep> steps;      // execution order
  bool allow_inplace = true;
  bool allow_sharing = true;  // false: every planned entry gets its own block
  // A pooled block is reused for a request of `bytes` when it holds at most
  // bytes * match_range (bigger blocks would waste too much), or grown when
  // it holds at least bytes / match_range.
  size_t match_range = 16;
};

struct MemoryPlan {
  static constexpr int kExternal = -1;  // not planned (external, or never written)

  std::vector<int> storage_id;        // per entry
  std::vector<bool> inplace;          // per entry: took an input's block in place
  std::vector<size_t> storage_bytes;  // per storage id
  size_t planned_bytes = 0;           // sum of storage_bytes
  size_t unshared_bytes = 0;          // sum of the bytes of every planned entry

  size_t num_storage() const { return storage_bytes.size(); }
};

MemoryPlan PlanMemory(const PlanRequest& req);

// "12.5 MB" style (binary megabytes, one decimal; bytes below 1 KiB as "N B").
std::string FormatBytes(size_t bytes);

}  // namespace tessera::graph
