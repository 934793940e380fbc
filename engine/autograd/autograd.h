// Autograd: imperative calls recorded under `record` become graph nodes that
// keep their output values; `Backward` builds the gradient graph of those
// nodes with the same gradient pass the executor uses (graph::Gradient) and
// runs its nodes as imperative calls, writing into the gradient buffers that
// `AttachGrad` made. The gradient arrays backward makes for itself are given
// to their last reader (InvokeOptions::donated, written in place where the
// op allows) and let go after it, as an executor's memory plan would.
#pragma once

#include <functional>
#include <memory>
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
// How backward writes that buffer (kNullOp when there is none).
OpReqType GetGradReq(const NDArray& x);

// Gradients of `heads` (head_grads: one per head, or none arrays for ones)
// into the buffers of every attached variable they depend on (a gradient
// that a node wrote into the buffer itself, a CachedOp's, is left there). Without
// retain_graph the recorded graph is freed: a second backward through it is
// an error. is_train: the training mode of the backward ops.
void Backward(const std::vector<NDArray>& heads, const std::vector<NDArray>& head_grads = {},
              bool retain_graph = false, bool is_train = true);

// Records a call made outside Invoke (a CachedOp's) as one node: `outputs`
// get its entries. Does nothing unless some input is tracked.
void RecordCall(const std::shared_ptr<const op::NodeAttrs>& attrs,
                const std::vector<NDArray>& inputs, std::vector<NDArray>* outputs);

// Views (a:reshape, a:slice, a[i]) of a tracked array made while recording
// are recorded as the ops that compute them (Reshape, slice_axis), as
// MXNet's ReshapeWithRecord / SliceWithRecord / AtWithRecord, so gradients
// flow through them; otherwise these are NDArray's plain views.
NDArray ReshapeWithRecord(const NDArray& a, const std::vector<int64_t>& spec);
NDArray SliceWithRecord(const NDArray& a, int64_t begin, int64_t end);
NDArray AtWithRecord(const NDArray& a, int64_t index);

// An op whose backward node runs on the thread running backward, pushing its
// own work (_backward_CachedOp): autograd calls it instead of Invoke, with
// the node's input values; it returns the node's outputs.
using FInvokeOnCaller =
    std::function<std::vector<NDArray>(const op::NodeAttrs&, const std::vector<NDArray>&)>;

// The recorded computation of `y` as a symbol (variables for its inputs).
graph::Symbol GetSymbol(const NDArray& y);

}  // namespace tessera::autograd
