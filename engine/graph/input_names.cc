#include "engine/graph/input_names.h"

#include "engine/op/op_attr_types.h"

namespace tessera::graph {

std::vector<std::string> InputNames(const op::NodeAttrs& attrs) {
  static const auto& flist = op::Op::GetAttr<op::FListInputNames>("FListInputNames");
  const uint32_t n = attrs.op->NumInputs(attrs);
  if (const op::FListInputNames* f = flist.find(attrs.op)) {
    std::vector<std::string> names = (*f)(attrs);
    if (names.size() == n) return names;
  }
  const auto& args = attrs.op->arguments();
  std::vector<std::string> names;
  if (args.size() == n) {
    bool single = true;  // a list argument ("NDArray[]") stands for many inputs
    for (const op::ArgumentInfo& a : args)
      single = single && a.type.find("[]") == std::string::npos;
    if (single) {
      for (const op::ArgumentInfo& a : args) names.push_back(a.name);
      return names;
    }
  }
  for (uint32_t i = 0; i < n; ++i) names.push_back("arg" + std::to_string(i));
  return names;
}

std::vector<std::string> OutputNames(const op::NodeAttrs& attrs) {
  static const auto& flist = op::Op::GetAttr<op::FListOutputNames>("FListOutputNames");
  const uint32_t n = attrs.op->NumOutputs(attrs);
  if (const op::FListOutputNames* f = flist.find(attrs.op)) {
    std::vector<std::string> names = (*f)(attrs);
    if (names.size() == n) return names;
  }
  if (n == 1) return {"output"};
  std::vector<std::string> names;
  for (uint32_t i = 0; i < n; ++i) names.push_back("output" + std::to_string(i));
  return names;
}

}  // namespace tessera::graph
