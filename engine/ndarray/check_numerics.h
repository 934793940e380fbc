// NaN and Inf hunting: with the switch on, every op checks the float values
// it wrote, and the first op that writes a NaN or an infinity fails with its
// name, its node's name in a graph, which output and element, and its
// inputs' shapes and whether each already held non-finite values. A
// gradient op (_backward_X) names X, the forward op it belongs to. The op
// fails like any failed op: its outputs are poisoned and the error comes
// back at the next wait. PyTorch's detect_anomaly plays this part there.
//
// Off by default; TESSERA_CHECK_NUMERICS=1, `tessera --check-numerics` or
// mx.engine.set_check_numerics(true) turn it on. It costs one pass over
// every output (docs/engine.md gives the measured cost). Arrays on a GPU
// are not checked yet: an op on a GPU fails with an error that says so.
#pragma once

#include <atomic>

#include "engine/ndarray/op_call.h"

namespace tessera::opcall {

extern std::atomic<bool> g_check_numerics;

inline bool CheckNumericsOn() {
  return g_check_numerics.load(std::memory_order_relaxed);
}
void SetCheckNumerics(bool on);

// Throws the error above when an output `call` wrote holds a NaN or an
// infinity (float32, float64, float16, bfloat16 outputs; others have none).
// Large outputs are scanned on `threads` OpenMP threads.
void CheckOutputs(const KernelCall& call, int threads = 1);

}  // namespace tessera::opcall
