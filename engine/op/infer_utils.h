// Shape and type inference helpers: assignment with conflict errors that
// name the op and both shapes, and the rules of elementwise ops.
#pragma once

#include <string>
#include <vector>

#include "engine/op/op_attr_types.h"

namespace tessera::op {

// Merges `value` into (*shapes)[i]; a conflict raises
// "<op>: <what> <i> has shape (2,3) but (3,3) is required".
void AssignShape(const NodeAttrs& attrs, std::vector<Shape>* shapes, size_t i, const Shape& value,
                 const char* what);
void AssignType(const NodeAttrs& attrs, std::vector<DType>* types, size_t i, DType value,
                const char* what);
// The op's name for messages ("quadratic", or "quadratic (node q0)").
std::string OpLabel(const NodeAttrs& attrs);

// FListInputNames of an op whose inputs have these names whatever its
// parameters.
inline FListInputNames FixedInputNames(std::vector<std::string> names) {
  return [names = std::move(names)](const NodeAttrs&) { return names; };
}

inline bool AllKnown(const std::vector<Shape>& v) {
  for (const Shape& s : v)
    if (!s.known()) return false;
  return true;
}
inline bool AllKnown(const std::vector<DType>& v) {
  for (DType t : v)
    if (t == DType::kUnknown) return false;
  return true;
}

// Every input and output has one shape (mutual: any known one fills the rest).
bool SameShapeAll(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out);
bool SameTypeAll(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out);

template <int n_in, int n_out>
bool ElemwiseShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(n_in < 0 || in->size() == size_t(n_in))
      << OpLabel(attrs) << ": expects " << n_in << " inputs, got " << in->size();
  TS_CHECK(out->size() == size_t(n_out))
      << OpLabel(attrs) << ": expects " << n_out << " outputs, got " << out->size();
  return SameShapeAll(attrs, in, out);
}
template <int n_in, int n_out>
bool ElemwiseType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  TS_CHECK(n_in < 0 || in->size() == size_t(n_in))
      << OpLabel(attrs) << ": expects " << n_in << " inputs, got " << in->size();
  return SameTypeAll(attrs, in, out);
}

}  // namespace tessera::op
