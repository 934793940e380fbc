// Device memory as the shell shows and manages it: a report of every pool
// (`:memory`), and giving pooled memory back (mx.context.empty_cache).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "engine/base/context.h"

namespace tessera::shell {

// One line per device tessera has allocated on (in use, pooled, peak,
// allocations from the system, pool hits), then the engine's op blocks and,
// for GPUs, what the driver reports free.
std::string MemoryReport();

// Gives the pooled blocks of `ctx` (or of every device, and the engine's
// wholly free op-block slabs, when there is no ctx) back to the system, and
// has every temp space drop its buffer at its next use. Blocks still in use,
// including those of arrays whose last ops are still running, are not
// touched. Returns the bytes given back.
size_t EmptyCache(std::optional<Context> ctx);

}  // namespace tessera::shell
