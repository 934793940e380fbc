// Imperative invocation: run a registered op on NDArrays now. Parameters,
// shapes and dtypes are checked here, synchronously, with errors that name
// the op and the shapes; outputs are allocated from the pool; the kernel is
// pushed to the engine and the call returns. Only failures inside the kernel
// travel through the engine (poisoning the outputs).
#pragma once

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "engine/ndarray/ndarray.h"
#include "engine/op/op.h"

namespace tessera {

struct InvokeOptions {
  std::optional<Context> ctx;  // for ops without inputs (else "ctx" parameter, else cpu(0))
  bool is_train = false;
  std::vector<OpReqType> req;  // per output; empty: write (kAddTo accumulates into out=)
  int priority = 0;
  // Bit i: the caller gives up input i's memory (this is its last use and
  // no other array shares it). A new output that the op may write in that
  // input's place (FInplaceOption), of the same shape, dtype and context,
  // takes it instead of new memory, as the executor's memory plan would.
  uint64_t donated = 0;
};

// The inputs of a call, by reference: the elements of a vector, or arrays
// held elsewhere (a binding's arguments) through an array of pointers. Nothing is copied; the
// caller keeps the arrays alive for the call.
class InputList {
 public:
  InputList(const std::vector<NDArray>& v) : data_(v.data()), n_(v.size()) {}
  InputList(const NDArray* const* refs, size_t n) : refs_(refs), n_(n) {}
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  const NDArray& operator[](size_t i) const { return refs_ ? *refs_[i] : data_[i]; }
  std::vector<NDArray> ToVector() const {
    std::vector<NDArray> v;
    v.reserve(n_);
    for (size_t i = 0; i < n_; ++i) v.push_back((*this)[i]);
    return v;
  }

 private:
  const NDArray* data_ = nullptr;
  const NDArray* const* refs_ = nullptr;
  size_t n_ = 0;
};

// Parses `params` for op `op_name`: unknown op, unknown key, bad value or
// missing required parameter raise an error naming the op and the key.
std::shared_ptr<const op::NodeAttrs> MakeAttrs(std::string_view op_name, op::ParamDict params = {});

// Runs attrs->op. `outputs` empty: allocated and returned in it; otherwise
// written (shapes and dtypes must match what the op infers). An output that
// is the same memory as an input is handled (in place where the op allows it,
// else through a temporary).
void Invoke(const std::shared_ptr<const op::NodeAttrs>& attrs, InputList inputs,
            std::vector<NDArray>* outputs, const InvokeOptions& opt = {});
inline void Invoke(const std::shared_ptr<const op::NodeAttrs>& attrs,
                   const std::vector<NDArray>& inputs, std::vector<NDArray>* outputs,
                   const InvokeOptions& opt = {}) {
  Invoke(attrs, InputList(inputs), outputs, opt);
}

// Shorthand: parse, run, return the outputs.
std::vector<NDArray> Invoke(std::string_view op_name, const std::vector<NDArray>& inputs,
                            op::ParamDict params = {}, const InvokeOptions& opt = {});

// Autograd's hold on imperative calls (engine/autograd sets both): whether
// this thread records calls and runs them in training mode, and the function
// that records a call after it was pushed. Kept here so that ndarray does
// not depend on autograd.
struct RecordState {
  bool recording = false;
  bool training = false;
};
RecordState& ThreadRecordState();
using RecordHook = void (*)(const std::shared_ptr<const op::NodeAttrs>& attrs,
                            const std::vector<NDArray>& inputs, std::vector<NDArray>* outputs);
void SetRecordHook(RecordHook hook);

}  // namespace tessera
