// The operator reference (docs/operators.md), rendered from the registry:
// every public operator with its description, inputs, parameters and aliases.
#pragma once

#include <map>
#include <string>

namespace tessera::opdoc {

// Each operator's "GPU" cell as a document recorded it, by title.
using GpuCells = std::map<std::string, std::string>;

// The GPU cells of the operator table in an existing reference (empty when
// it has none).
GpuCells RecordedGpuCells(const std::string& document);

// The whole Markdown document. Deterministic: operators sorted by name,
// aliases sorted. Backward ops and internal ops (names starting with '_'
// without a public alias) are left out. The table's GPU column comes from
// the registry in a CUDA build; a build without CUDA cannot know it and
// keeps `recorded` (what the last CUDA build wrote).
std::string RenderOperatorReference(const GpuCells& recorded);

}  // namespace tessera::opdoc
