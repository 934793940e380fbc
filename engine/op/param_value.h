// How each parameter field type reads from and writes to the key/value
// strings of MXNet's operator interface ("1.5", "(2,3)", "True", "None").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/dtype.h"
#include "engine/base/shape.h"

namespace tessera::op {

// Each Parse returns false on malformed text; the caller builds the error
// message (it knows the op and the field).
bool ParseValue(std::string_view s, bool* out);
bool ParseValue(std::string_view s, int* out);
bool ParseValue(std::string_view s, int64_t* out);
bool ParseValue(std::string_view s, float* out);
bool ParseValue(std::string_view s, double* out);
bool ParseValue(std::string_view s, std::string* out);
bool ParseValue(std::string_view s, DType* out);
bool ParseValue(std::string_view s, Shape* out);
// A tuple of integers that may be negative (axes, reshape codes, begin/end).
bool ParseValue(std::string_view s, std::vector<int64_t>* out);
bool ParseValue(std::string_view s, std::vector<double>* out);

template <typename T>
bool ParseValue(std::string_view s, std::optional<T>* out) {
  if (s == "None" || s == "none" || s == "") {
    out->reset();
    return true;
  }
  T v{};
  if (!ParseValue(s, &v)) return false;
  *out = v;
  return true;
}

std::string FormatValue(bool v);
std::string FormatValue(int v);
std::string FormatValue(int64_t v);
std::string FormatValue(float v);
std::string FormatValue(double v);
std::string FormatValue(const std::string& v);
std::string FormatValue(DType v);
std::string FormatValue(const Shape& v);
std::string FormatValue(const std::vector<int64_t>& v);
std::string FormatValue(const std::vector<double>& v);
template <typename T>
std::string FormatValue(const std::optional<T>& v) {
  return v ? FormatValue(*v) : "None";
}

// The type names of the operator reference.
template <typename T>
struct ValueTypeName;
template <>
struct ValueTypeName<bool> {
  static constexpr const char* value = "boolean";
};
template <>
struct ValueTypeName<int> {
  static constexpr const char* value = "int";
};
template <>
struct ValueTypeName<int64_t> {
  static constexpr const char* value = "long";
};
template <>
struct ValueTypeName<float> {
  static constexpr const char* value = "float";
};
template <>
struct ValueTypeName<double> {
  static constexpr const char* value = "double";
};
template <>
struct ValueTypeName<std::string> {
  static constexpr const char* value = "string";
};
template <>
struct ValueTypeName<DType> {
  static constexpr const char* value = "dtype";
};
template <>
struct ValueTypeName<Shape> {
  static constexpr const char* value = "Shape(tuple)";
};
template <>
struct ValueTypeName<std::vector<int64_t>> {
  static constexpr const char* value = "tuple of int";
};
template <>
struct ValueTypeName<std::vector<double>> {
  static constexpr const char* value = "tuple of float";
};
// The type name of any field type, optional ones included. A function, not a
// static string, so that registrations in other files' static initialisers
// never see it before it is built.
template <typename T>
struct FieldTypeName {
  static std::string get() { return ValueTypeName<T>::value; }
};
template <typename T>
struct FieldTypeName<std::optional<T>> {
  static std::string get() { return FieldTypeName<T>::get() + " or None"; }
};

}  // namespace tessera::op
