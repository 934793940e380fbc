#include "engine/op/infer_utils.h"

namespace tessera::op {

std::string OpLabel(const NodeAttrs& attrs) {
  std::string s = attrs.op ? attrs.op->name() : "operator";
  if (!attrs.name.empty()) s += " (node " + attrs.name + ")";
  return s;
}

void AssignShape(const NodeAttrs& attrs, std::vector<Shape>* shapes, size_t i, const Shape& value,
                 const char* what) {
  Shape merged = (*shapes)[i];
  TS_CHECK(MergeShape(&merged, value))
      << OpLabel(attrs) << ": " << what << " " << i << " has shape " << (*shapes)[i] << " but "
      << value << " is required";
  (*shapes)[i] = merged;
}

void AssignType(const NodeAttrs& attrs, std::vector<DType>* types, size_t i, DType value,
                const char* what) {
  if (value == DType::kUnknown) return;
  DType& t = (*types)[i];
  TS_CHECK(t == DType::kUnknown || t == value)
      << OpLabel(attrs) << ": " << what << " " << i << " has dtype " << DTypeName(t) << " but "
      << DTypeName(value) << " is required";
  t = value;
}

bool SameShapeAll(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  Shape common;
  auto merge = [&](const Shape& s, const char* what, size_t i) {
    TS_CHECK(MergeShape(&common, s))
        << OpLabel(attrs) << ": " << what << " " << i << " has shape " << s
        << ", incompatible with " << common << " (this op needs equal shapes)";
  };
  for (size_t i = 0; i < in->size(); ++i) merge((*in)[i], "input", i);
  for (size_t i = 0; i < out->size(); ++i) merge((*out)[i], "output", i);
  for (size_t i = 0; i < in->size(); ++i) AssignShape(attrs, in, i, common, "input");
  for (size_t i = 0; i < out->size(); ++i) AssignShape(attrs, out, i, common, "output");
  return common.known();
}

bool SameTypeAll(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType common = DType::kUnknown;
  auto merge = [&](DType t, const char* what, size_t i) {
    if (t == DType::kUnknown) return;
    TS_CHECK(common == DType::kUnknown || common == t)
        << OpLabel(attrs) << ": " << what << " " << i << " has dtype " << DTypeName(t)
        << " but an earlier argument is " << DTypeName(common);
    common = t;
  };
  for (size_t i = 0; i < in->size(); ++i) merge((*in)[i], "input", i);
  for (size_t i = 0; i < out->size(); ++i) merge((*out)[i], "output", i);
  for (auto& t : *in) t = t == DType::kUnknown ? common : t;
  for (auto& t : *out) t = t == DType::kUnknown ? common : t;
  return common != DType::kUnknown;
}

}  // namespace tessera::op
