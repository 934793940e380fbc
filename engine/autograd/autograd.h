// Autograd: imperative calls recorded under `record` become graph nodes that
// keep their output values; `Backward` builds the gradient graph of those
// nodes with the same gradient pass the executor uses (graph::Gradient) and
// runs its nodes as imperative calls, writing into the gradient buffers that
// `AttachGrad` made.
#pragma once

#include <vector>

#include "engine/base/tblob.h"
#include "engine/graph/symbol.h"
#include "engine/ndarray/ndarray.h"

namespace tessera::autograd {

// Thread-local modes; each setter returns the previous value.
bool IsRecording();
bool IsTraining();
bool SetRecording(bool on);
bool SetTraining(bool on);

// Gives `x` a gradient buffer (zeros, same shape, dtype and context) and a
// variable node, so recorded calls that read x are differentiated with
// respect to it. `req`: kWriteTo, kAddTo or kNullOp. Returns the buffer.
NDArray AttachGrad(NDArray* x, OpReqType req = kWriteTo);
// The gradient buffer of x; none when x has no attached gradient.
NDArray GetGrad(const NDArray& x);

// Gradients of `heads` (head_grads: one per head, or none arrays for ones)
// into the buffers of every attached variable they depend on. Without
// retain_graph the recorded graph is freed: a second backward through it is
// an error. is_train: the training mode of the backward ops.
void Backward(const std::vector<NDArray>& heads, const std::vector<NDArray>& head_grads = {},
              bool retain_graph = false, bool is_train = true);

// The recorded computation of `y` as a symbol (variables for its inputs).
graph::Symbol GetSymbol(const NDArray& y);

}  // namespace tessera::autograd
