// Parameter structs: an op's typed parameters, declared once with default,
// range or enum, and description, parsed from MXNet's key/value strings.
//
//   struct QuadraticParam : Params<QuadraticParam> {
//     float a = 0, b = 0, c = 0;
//     static void Declare(ParamDecl<QuadraticParam>& d) {
//       d.field("a", &QuadraticParam::a).set_default(0.f).describe("x^2 coefficient.");
//       ...
//     }
//   };
//
// A field without set_default is required. Errors name the op and the field.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/error.h"
#include "engine/op/param_value.h"

namespace tessera::op {

using ParamDict = std::map<std::string, std::string, std::less<>>;

// What the docs and the Lua binding know about a field.
struct FieldInfo {
  std::string name;
  std::string type;         // "float", "int or None", "{'relu', 'tanh'}", ...
  std::string default_str;  // empty when required
  std::string description;
  bool required = true;
  bool is_axis = false;  // an axis or tuple of axes: 1-based at the Lua surface
  std::vector<std::string> enum_names;
};

class FieldBase {
 public:
  virtual ~FieldBase() = default;
  virtual void Set(void* obj, std::string_view text, std::string_view op) const = 0;
  virtual void SetDefault(void* obj) const = 0;
  virtual std::string Get(const void* obj) const = 0;
  const FieldInfo& info() const { return info_; }

 protected:
  FieldInfo info_;
};

template <typename P, typename T>
class Field final : public FieldBase {
 public:
  Field(std::string name, T P::*member) : member_(member) {
    info_.name = std::move(name);
    info_.type = FieldTypeName<T>::get();
  }
  Field& set_default(T v) {
    default_ = v;
    info_.required = false;
    info_.default_str = DefaultText(v);
    return *this;
  }
  Field& describe(std::string text) {
    info_.description = std::move(text);
    return *this;
  }
  // Inclusive bounds, checked on every parse.
  Field& set_range(T lo, T hi) {
    lo_ = lo;
    hi_ = hi;
    return *this;
  }
  Field& set_lower_bound(T lo) {
    lo_ = lo;
    return *this;
  }
  // Enum fields hold an int and read one of the names ("relu" -> 0).
  Field& add_enum(std::string name, int value) {
    enum_.emplace_back(name, value);
    info_.enum_names.push_back(name);
    // Built in a local: assigning a literal to info_.type here trips GCC 12's
    // -Wrestrict false positive (its bug 105651).
    std::string type(1, '{');
    for (size_t i = 0; i < enum_.size(); ++i) type += (i ? ", '" : "'") + enum_[i].first + "'";
    type += '}';
    info_.type = std::move(type);
    if (default_) info_.default_str = DefaultText(*default_);
    return *this;
  }
  // Marks an axis or tuple of axes: the Lua binding shifts it from 1-based.
  Field& set_axis() {
    info_.is_axis = true;
    return *this;
  }

  void Set(void* obj, std::string_view text, std::string_view op) const override {
    T v{};
    if (!enum_.empty()) {
      if (!ParseEnum(text, &v))
        TS_THROW << op << ": parameter '" << info_.name << "' got '" << text
                 << "', expected one of " << info_.type;
    } else if (!ParseValue(text, &v)) {
      TS_THROW << op << ": parameter '" << info_.name << "' got '" << text << "', expected "
               << info_.type;
    }
    CheckRange(v, op);
    static_cast<P*>(obj)->*member_ = v;
  }
  void SetDefault(void* obj) const override { static_cast<P*>(obj)->*member_ = *default_; }
  std::string Get(const void* obj) const override {
    return DefaultText(static_cast<const P*>(obj)->*member_);
  }

 private:
  std::string DefaultText(const T& v) const {
    if constexpr (std::is_same_v<T, int>) {
      for (const auto& [name, value] : enum_)
        if (value == v) return name;
    }
    return FormatValue(v);
  }
  bool ParseEnum(std::string_view text, T* out) const {
    if constexpr (std::is_same_v<T, int>) {
      if (text.size() >= 2 && (text.front() == '\'' || text.front() == '"'))
        text = text.substr(1, text.size() - 2);
      for (const auto& [name, value] : enum_)
        if (name == text) return *out = value, true;
    }
    return false;
  }
  void CheckRange(const T& v, std::string_view op) const {
    if constexpr (std::is_arithmetic_v<T>) {
      if ((lo_ && v < *lo_) || (hi_ && v > *hi_)) {
        auto e = TS_THROW;
        e << op << ": parameter '" << info_.name << "' is " << FormatValue(v) << ", must be ";
        if (lo_ && hi_)
          e << "in [" << FormatValue(*lo_) << ", " << FormatValue(*hi_) << "]";
        else
          e << ">= " << FormatValue(*lo_);
      }
    }
  }

  using Member = T P::*;
  Member member_;
  std::optional<T> default_, lo_, hi_;
  std::vector<std::pair<std::string, int>> enum_;
};

template <typename P>
class ParamDecl {
 public:
  template <typename T>
  Field<P, T>& field(std::string name, T P::*member) {
    auto f = std::make_unique<Field<P, T>>(std::move(name), member);
    Field<P, T>& ref = *f;
    fields_.push_back(std::move(f));
    return ref;
  }
  const std::vector<std::unique_ptr<FieldBase>>& fields() const { return fields_; }

 private:
  std::vector<std::unique_ptr<FieldBase>> fields_;
};

// Shared by every Params<P>: fills a struct from a dict.
void InitParams(void* obj, const std::vector<std::unique_ptr<FieldBase>>& fields,
                const ParamDict& kwargs, std::string_view op, bool allow_unknown);

template <typename P>
struct Params {
  static const ParamDecl<P>& Decl() {
    static const ParamDecl<P> decl = [] {
      ParamDecl<P> d;
      P::Declare(d);
      return d;
    }();
    return decl;
  }
  static std::vector<FieldInfo> Fields() {
    std::vector<FieldInfo> out;
    for (const auto& f : Decl().fields()) out.push_back(f->info());
    return out;
  }
  // Sets every field from `kwargs` (defaults for the rest). Unknown keys,
  // malformed values, out-of-range values and missing required fields raise
  // an error naming `op` and the field.
  void Init(const ParamDict& kwargs, std::string_view op, bool allow_unknown = false) {
    InitParams(static_cast<P*>(this), Decl().fields(), kwargs, op, allow_unknown);
  }
  // Every field as text, the inverse of Init.
  ParamDict GetDict() const {
    ParamDict out;
    for (const auto& f : Decl().fields()) out[f->info().name] = f->Get(static_cast<const P*>(this));
    return out;
  }
};

}  // namespace tessera::op
