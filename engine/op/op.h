// The operator registry, attribute style (as NNVM): an Op has a name, a
// description, input/output counts, a parameter parser, and any number of
// typed attributes under string keys ("FInferShape", "FCompute<cpu>", ...),
// so a new capability never changes a central interface.
//
//   TS_REGISTER_OP(quadratic)
//       .describe("y = a x^2 + b x + c")
//       .set_num_inputs(1)
//       .set_attr_parser(ParamParser<QuadraticParam>)
//       .set_attr<FInferShape>("FInferShape", ElemwiseShape<1, 1>)
//       ...
//
// Attributes are read through OpMap<T> (Op::GetAttr), a vector indexed by the
// op's index: one load per lookup on the invocation path.
#pragma once

#include <any>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>
#include <vector>

#include "engine/base/error.h"
#include "engine/op/params.h"

namespace tessera::op {

class Op;
struct Subgraph;  // node.h

// An op applied with concrete parameters: what a graph node or an imperative
// call carries. `parsed` holds the op's parameter struct. `subgraphs` are the
// graphs a control-flow node runs (nnvm's NodeAttrs::subgraphs: _foreach's
// body; _while_loop's cond and func; _cond's cond, then and else), shared,
// never changed once the node is built.
struct NodeAttrs {
  const Op* op = nullptr;
  std::string name;  // node name (symbols), empty for imperative calls
  ParamDict dict;    // parameters as given, key -> text
  std::any parsed;
  std::vector<std::shared_ptr<const Subgraph>> subgraphs;
};

// The parsed parameter struct of `attrs`.
template <typename P>
const P& ParamsOf(const NodeAttrs& attrs) {
  const P* p = std::any_cast<P>(&attrs.parsed);
  TS_CHECK(p) << "parameters of this node were not parsed as " << typeid(P).name();
  return *p;
}

struct ArgumentInfo {
  std::string name;
  std::string type;  // "NDArray", "NDArray[]", "Symbol"
  std::string description;
};

// Type-erased per-key attribute storage.
class OpMapBase {
 public:
  virtual ~OpMapBase() = default;
  const std::type_info* type = nullptr;
};

template <typename T>
class OpMap final : public OpMapBase {
 public:
  bool contains(const Op* op) const;
  // The attribute of `op`; an error if it has none.
  const T& operator[](const Op* op) const;
  // The attribute of `op`, or `fallback`.
  const T& get(const Op* op, const T& fallback) const;
  const T* find(const Op* op) const;

 private:
  friend class Op;
  std::string key_;
  // By op index; null where the op has none. Each attribute has its own
  // allocation: registering another op does not move the attributes of
  // earlier ones, which pushed ops and per-call caches point to.
  std::vector<std::unique_ptr<T>> data_;
};

class Op {
 public:
  using NumFn = std::function<uint32_t(const NodeAttrs&)>;

  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }
  uint32_t index() const { return index_; }
  const std::vector<ArgumentInfo>& arguments() const { return arguments_; }
  const std::vector<FieldInfo>& params() const { return params_; }
  const std::string& key_var_num_args() const { return key_var_num_args_; }
  const std::vector<std::string>& aliases() const { return aliases_; }

  uint32_t NumInputs(const NodeAttrs& attrs) const;
  uint32_t NumOutputs(const NodeAttrs& attrs) const;
  // Parses attrs->dict into attrs->parsed (no-op for ops without a parser).
  // Counts that come from parameters (split's num_outputs, concat's
  // num_args) are checked against kMaxArity here, where every node and call
  // is made: callers size vectors by them.
  void ParseAttrs(NodeAttrs* attrs) const;
  static constexpr uint32_t kMaxArity = 65536;

  Op& describe(std::string text);
  Op& set_num_inputs(uint32_t n);
  Op& set_num_inputs(NumFn fn);
  Op& set_num_outputs(uint32_t n);
  Op& set_num_outputs(NumFn fn);
  Op& set_attr_parser(std::function<void(NodeAttrs*)> parser);
  Op& add_argument(std::string name, std::string type, std::string description);
  Op& add_arguments(const std::vector<FieldInfo>& params);
  // For ops with a variable number of inputs: the parameter that counts them.
  Op& set_key_var_num_args(std::string key);
  Op& add_alias(std::string alias);

  template <typename T>
  Op& set_attr(std::string_view key, T value) {
    OpMap<T>& map = MutableAttrMap<T>(key);
    if (map.data_.size() <= index_) map.data_.resize(index_ + 1);
    if (map.data_[index_])
      *map.data_[index_] = std::move(value);  // in place: its address stays
    else
      map.data_[index_] = std::make_unique<T>(std::move(value));
    return *this;
  }

  template <typename T>
  static const OpMap<T>& GetAttr(std::string_view key) {
    return MutableAttrMap<T>(key);
  }
  // True when any op registered attribute `key` (of any type).
  static bool HasAttrKey(std::string_view key);

  // Registration (static initialisers and plugins). Registering a name again
  // returns the existing op, as NNVM does.
  static Op& Register(std::string_view name);
  // The op named `name` (or an alias); an error naming it when unknown.
  static const Op* Get(std::string_view name);
  // Null when unknown.
  static const Op* Find(std::string_view name);
  // Every op, in registration order.
  static std::vector<const Op*> ListAll();

 private:
  explicit Op(std::string name, uint32_t index) : name_(std::move(name)), index_(index) {}
  // Keys are looked up as views: registration names thousands of them as
  // literals, and making a string of each was a part of start-up.
  static OpMapBase*& AttrSlot(std::string_view key, const std::type_info& type);
  template <typename T>
  static OpMap<T>& MutableAttrMap(std::string_view key) {
    OpMapBase*& slot = AttrSlot(key, typeid(OpMap<T>));
    if (!slot) {
      auto* m = new OpMap<T>();  // lives as long as the registry: the process
      m->type = &typeid(OpMap<T>);
      m->key_ = key;
      slot = m;
    }
    return *static_cast<OpMap<T>*>(slot);
  }

  std::string name_;
  std::string description_;
  uint32_t index_;
  uint32_t num_inputs_ = 1, num_outputs_ = 1;
  NumFn num_inputs_fn_, num_outputs_fn_;
  std::function<void(NodeAttrs*)> parser_;
  std::vector<ArgumentInfo> arguments_;
  std::vector<FieldInfo> params_;
  std::string key_var_num_args_;
  std::vector<std::string> aliases_;
};

template <typename T>
bool OpMap<T>::contains(const Op* op) const {
  return op && op->index() < data_.size() && data_[op->index()];
}
template <typename T>
const T* OpMap<T>::find(const Op* op) const {
  return contains(op) ? data_[op->index()].get() : nullptr;
}
template <typename T>
const T& OpMap<T>::operator[](const Op* op) const {
  TS_CHECK(contains(op)) << "operator " << (op ? op->name() : "(null)") << " has no " << key_;
  return *data_[op->index()];
}
template <typename T>
const T& OpMap<T>::get(const Op* op, const T& fallback) const {
  return contains(op) ? *data_[op->index()] : fallback;
}

// The attr parser of ops whose parameters are a Params<P> struct.
template <typename P>
void ParamParser(NodeAttrs* attrs) {
  P p;
  p.Init(attrs->dict, attrs->op ? std::string_view(attrs->op->name()) : "operator");
  attrs->parsed = std::move(p);
}

}  // namespace tessera::op

#define TS_OP_CONCAT_(a, b) a##b
#define TS_OP_CONCAT(a, b) TS_OP_CONCAT_(a, b)
// TS_REGISTER_OP(name) .describe(...) .set_attr<...>(...);  at namespace scope.
#define TS_REGISTER_OP(name)                                                         \
  [[maybe_unused]] static ::tessera::op::Op& TS_OP_CONCAT(ts_op_reg_, __COUNTER__) = \
      ::tessera::op::Op::Register(#name)
