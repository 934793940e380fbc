// The attribute types ops register (the keys are the strings MXNet uses).
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/context.h"
#include "engine/base/tblob.h"
#include "engine/op/node.h"
#include "engine/resource/resource.h"
#include "engine/scheduler/handles.h"

namespace tessera::op {

using engine::VarHandle;
using resource::Resource;
using resource::ResourceRequest;

// What a kernel knows about the call besides its data.
struct OpContext {
  bool is_train = false;
  RunContext run_ctx;
  std::vector<Resource> requested;  // in the order of FResourceRequest
  // Async ops only (FExecType kAsync): ends the op, with an error or null.
  // Called exactly once, from any thread.
  std::function<void(std::exception_ptr)> async_on_complete;

  template <typename T>
  T get_stream() const {
    return run_ctx.get_stream<T>();
  }
};

// The state of a stateful op instance (cuDNN descriptors, BatchNorm, custom
// ops). Calls on one state run in push order: the state has its own engine
// variable, which every stateful call writes.
class OpStatePtr {
 public:
  OpStatePtr() = default;
  template <typename T, typename... Args>
  static OpStatePtr Create(Args&&... args) {
    OpStatePtr p;
    p.ptr_ = std::make_shared<Holder>(std::make_shared<T>(std::forward<Args>(args)...));
    return p;
  }
  template <typename T>
  T& get_state() const {
    TS_CHECK(ptr_) << "stateful op called without a state";
    return *static_cast<T*>(ptr_->state.get());
  }
  VarHandle var() const { return ptr_ ? ptr_->var : nullptr; }
  explicit operator bool() const { return ptr_ != nullptr; }

 private:
  struct Holder {
    explicit Holder(std::shared_ptr<void> s);
    ~Holder();
    std::shared_ptr<void> state;
    VarHandle var;
  };
  std::shared_ptr<Holder> ptr_;
};

// Fills unknown shapes (ndim 0, or dimensions 0) of inputs and outputs from
// the known ones; false when something stays unknown; an error on conflict.
using FInferShape =
    std::function<bool(const NodeAttrs&, std::vector<Shape>* in, std::vector<Shape>* out)>;
// The same for element types (DType::kUnknown).
using FInferType =
    std::function<bool(const NodeAttrs&, std::vector<DType>* in, std::vector<DType>* out)>;

using FCompute =
    std::function<void(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReqType>& req, const std::vector<TBlob>& out)>;
using FCreateOpState =
    std::function<OpStatePtr(const NodeAttrs&, Context, const std::vector<Shape>& in_shapes,
                             const std::vector<DType>& in_types)>;
using FStatefulCompute =
    std::function<void(const OpStatePtr&, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReqType>& req, const std::vector<TBlob>& out)>;

// Builds the gradient of each input of `n` from the output gradients.
using FGradient =
    std::function<std::vector<NodeEntry>(const NodePtr& n, const std::vector<NodeEntry>& ograds)>;
// (input, output) pairs that may share memory.
using FInplaceOption = std::function<std::vector<std::pair<int, int>>(const NodeAttrs&)>;
using FResourceRequest = std::function<std::vector<ResourceRequest>(const NodeAttrs&)>;
using FListInputNames = std::function<std::vector<std::string>(const NodeAttrs&)>;
using FListOutputNames = std::function<std::vector<std::string>(const NodeAttrs&)>;
using FNumVisibleOutputs = std::function<uint32_t(const NodeAttrs&)>;
// Inputs the op writes (auxiliary states such as BatchNorm's moving mean).
using FMutateInputs = std::function<std::vector<uint32_t>(const NodeAttrs&)>;
// How an op's compute runs. kAsync: the compute may return before the work
// is done and ends the op through OpContext::async_on_complete, freeing the
// engine worker meanwhile (custom ops whose bodies run on the interpreter
// thread). Such ops are never bulked with others.
enum class ExecType { kSync, kAsync };
using FExecType = std::function<ExecType(const NodeAttrs&)>;
// Marks a backward-only op.
using TIsBackward = bool;

// Which of a node's arrays the CPU kernel reads or writes in oneDNN's
// channel-blocked layout (MemLayout::kNChw16c) when the graph executor keeps
// them so between ops, sparing the reorders to and from the plain layout.
// One class per input and per output: kLayoutPlain, the array is always
// row-major; kLayoutFree, either layout, chosen independently of the node's
// other arrays (the kernel converts); k > 0, either layout, the same for
// every array of class k (the kernel computes in that layout). An op
// without the attribute sees every array row-major. Called at bind with the
// inputs' shapes. `elementwise`: every
// array is one class (an op whose outputs are elementwise functions of
// same-shape inputs works in any common layout); `in` and `out` unused.
inline constexpr int kLayoutPlain = -1;
inline constexpr int kLayoutFree = 0;
struct LayoutClasses {
  std::vector<int> in, out;
  bool elementwise = false;
};
using FLayoutClasses =
    std::function<LayoutClasses(const NodeAttrs&, const std::vector<Shape>& in_shapes)>;
// The FLayoutClasses of an elementwise op.
inline LayoutClasses ElementwiseLayout(const NodeAttrs&, const std::vector<Shape>&) {
  LayoutClasses c;
  c.elementwise = true;
  return c;
}

inline constexpr const char* kFComputeCPU = "FCompute<cpu>";
inline constexpr const char* kFComputeGPU = "FCompute<gpu>";
inline constexpr const char* kFStatefulComputeCPU = "FStatefulCompute<cpu>";
inline constexpr const char* kFStatefulComputeGPU = "FStatefulCompute<gpu>";

}  // namespace tessera::op
