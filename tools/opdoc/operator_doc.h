// The operator reference (docs/operators.md), rendered from the registry:
// every public operator with its description, inputs, parameters and aliases.
#pragma once

#include <string>

namespace tessera::opdoc {

// The whole Markdown document. Deterministic: operators sorted by name,
// aliases sorted. Backward ops and internal ops (names starting with '_'
// without a public alias) are left out.
std::string RenderOperatorReference();

}  // namespace tessera::opdoc
