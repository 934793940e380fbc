#include "engine/op/op.h"

#include <deque>
#include <map>
#include <unordered_map>

#include "engine/op/deferred_init.h"
#include "engine/op/registration_guard.h"

namespace tessera::op {
namespace {

// Ops with an index below this existed when this thread's innermost
// RegistrationGuard began; 0 when there is none, which protects nothing.
thread_local uint32_t t_guard_boundary = 0;

void CheckNotProtected(const Op& existing, std::string_view name, const char* what) {
  TS_CHECK(existing.index() >= t_guard_boundary)
      << what << " '" << name << "' already exists"
      << (name == existing.name() ? "" : " (an alias of '" + existing.name() + "')")
      << "; a plugin can only add operators under new names";
}

struct Registry {
  std::mutex mu;
  std::deque<Op*> ops;  // index order
  std::map<std::string, Op*, std::less<>> by_name;
  // Transparent, so that a key is found from a view without a string.
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view k) const { return std::hash<std::string_view>{}(k); }
  };
  std::unordered_map<std::string, OpMapBase*, KeyHash, std::equal_to<>> attrs;

  // Every entry to the registry comes here: the deferred registrations run
  // on the first (deferred_init.h).
  static Registry& Get() {
    RunDeferredInit();
    static Registry* r = new Registry();  // never destroyed: ops outlive static teardown
    return *r;
  }
};

}  // namespace

uint32_t Op::NumInputs(const NodeAttrs& attrs) const {
  return num_inputs_fn_ ? num_inputs_fn_(attrs) : num_inputs_;
}
uint32_t Op::NumOutputs(const NodeAttrs& attrs) const {
  return num_outputs_fn_ ? num_outputs_fn_(attrs) : num_outputs_;
}
void Op::ParseAttrs(NodeAttrs* attrs) const {
  attrs->op = this;
  if (parser_) {
    parser_(attrs);
  } else if (!attrs->dict.empty()) {
    for (const auto& [key, value] : attrs->dict)
      TS_CHECK(key.starts_with("__"))
          << name_ << ": unknown parameter '" << key << "' (it takes no parameters)";
  }
  if (num_inputs_fn_ || num_outputs_fn_) {
    const uint32_t n_in = NumInputs(*attrs), n_out = NumOutputs(*attrs);
    TS_CHECK(n_in <= kMaxArity && n_out <= kMaxArity)
        << name_ << ": these parameters give " << n_in << " input" << (n_in == 1 ? "" : "s")
        << " and " << n_out << " output" << (n_out == 1 ? "" : "s") << ", more than the "
        << kMaxArity << " an operator may have";
  }
}

Op& Op::describe(std::string text) {
  description_ = std::move(text);
  return *this;
}
Op& Op::set_num_inputs(uint32_t n) {
  num_inputs_ = n;
  num_inputs_fn_ = nullptr;
  return *this;
}
Op& Op::set_num_inputs(NumFn fn) {
  num_inputs_fn_ = std::move(fn);
  return *this;
}
Op& Op::set_num_outputs(uint32_t n) {
  num_outputs_ = n;
  num_outputs_fn_ = nullptr;
  return *this;
}
Op& Op::set_num_outputs(NumFn fn) {
  num_outputs_fn_ = std::move(fn);
  return *this;
}
Op& Op::set_attr_parser(std::function<void(NodeAttrs*)> parser) {
  parser_ = std::move(parser);
  return *this;
}
Op& Op::add_argument(std::string name, std::string type, std::string description) {
  arguments_.push_back({std::move(name), std::move(type), std::move(description)});
  return *this;
}
Op& Op::add_arguments(const std::vector<FieldInfo>& params) {
  params_.insert(params_.end(), params.begin(), params.end());
  return *this;
}
Op& Op::set_key_var_num_args(std::string key) {
  key_var_num_args_ = std::move(key);
  return *this;
}
Op& Op::add_alias(std::string alias) {
  Registry& r = Registry::Get();
  std::lock_guard lock(r.mu);
  if (auto it = r.by_name.find(alias); it != r.by_name.end() && it->second != this)
    CheckNotProtected(*it->second, alias, "operator name");
  r.by_name[alias] = this;
  aliases_.push_back(std::move(alias));
  return *this;
}

OpMapBase*& Op::AttrSlot(std::string_view key, const std::type_info& type) {
  Registry& r = Registry::Get();
  std::lock_guard lock(r.mu);
  auto it = r.attrs.find(key);
  if (it == r.attrs.end()) it = r.attrs.emplace(std::string(key), nullptr).first;
  OpMapBase*& slot = it->second;
  TS_CHECK(!slot || *slot->type == type)
      << "operator attribute " << key << " registered with two different types";
  return slot;
}

bool Op::HasAttrKey(std::string_view key) {
  Registry& r = Registry::Get();
  std::lock_guard lock(r.mu);
  return r.attrs.find(key) != r.attrs.end();
}

Op& Op::Register(std::string_view name) {
  Registry& r = Registry::Get();
  std::lock_guard lock(r.mu);
  auto it = r.by_name.find(name);
  if (it != r.by_name.end()) {
    CheckNotProtected(*it->second, name, "operator");
    return *it->second;
  }
  Op* op = new Op(std::string(name), static_cast<uint32_t>(r.ops.size()));
  r.ops.push_back(op);
  r.by_name.emplace(op->name(), op);
  return *op;
}

const Op* Op::Find(std::string_view name) {
  Registry& r = Registry::Get();
  std::lock_guard lock(r.mu);
  auto it = r.by_name.find(name);
  return it == r.by_name.end() ? nullptr : it->second;
}

const Op* Op::Get(std::string_view name) {
  const Op* op = Find(name);
  TS_CHECK(op) << "unknown operator '" << name << "'";
  return op;
}

RegistrationGuard::RegistrationGuard() : saved_(t_guard_boundary) {
  Registry& r = Registry::Get();
  std::lock_guard lock(r.mu);
  t_guard_boundary = static_cast<uint32_t>(r.ops.size());
}

RegistrationGuard::~RegistrationGuard() {
  t_guard_boundary = saved_;
}

std::vector<const Op*> Op::ListAll() {
  Registry& r = Registry::Get();
  std::lock_guard lock(r.mu);
  return {r.ops.begin(), r.ops.end()};
}

}  // namespace tessera::op
