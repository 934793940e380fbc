#include "tools/opdoc/operator_doc.h"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <vector>

#include "engine/base/context.h"
#include "engine/ndarray/op_attr_ndarray.h"
#include "engine/op/op.h"
#include "engine/op/op_attr_types.h"

namespace tessera::opdoc {
namespace {

using op::Op;

struct Entry {
  std::string title;                // the name users call it by
  std::vector<std::string> others;  // the registered name and other aliases
  const Op* op;
};

bool IsPublic(const std::string& name) {
  return !name.empty() && name[0] != '_';
}

// Operators under their public names: `_zeros` (alias `zeros`) is listed as
// `zeros`; ops with no public name are internal and not listed.
std::vector<Entry> PublicOperators() {
  const auto& is_backward = Op::GetAttr<op::TIsBackward>("TIsBackward");
  std::vector<Entry> entries;
  for (const Op* op : Op::ListAll()) {
    if (is_backward.get(op, false)) continue;
    std::vector<std::string> aliases = op->aliases();
    std::sort(aliases.begin(), aliases.end());
    aliases.erase(std::unique(aliases.begin(), aliases.end()), aliases.end());
    Entry e{op->name(), {}, op};
    if (!IsPublic(op->name())) {
      // `_random_normal` is `random_normal` when it has that alias.
      auto pub = std::find(aliases.begin(), aliases.end(), op->name().substr(1));
      if (pub == aliases.end()) pub = std::find_if(aliases.begin(), aliases.end(), IsPublic);
      if (pub == aliases.end()) continue;
      e.title = *pub;
      aliases.erase(pub);
      e.others.push_back(op->name());
    }
    for (const std::string& a : aliases) e.others.push_back(a);
    entries.push_back(std::move(e));
  }
  // Case-insensitive, so `SwapAxis` sorts among the s's.
  auto key = [](const std::string& s) {
    std::string k;
    for (char c : s) k += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return std::make_pair(k, s);
  };
  std::sort(entries.begin(), entries.end(),
            [&](const Entry& a, const Entry& b) { return key(a.title) < key(b.title); });
  return entries;
}

// Table cells: one line, no column breaks.
std::string Cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out.empty() ? " " : out;
}

std::string Anchor(const std::string& title) {
  std::string a;
  for (char c : title) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      a += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (c == '_' || c == '-')
      a += c;
  }
  return a;
}

constexpr const char* kGpuUnknown = "? (regenerate in a CUDA build)";

// "yes" when the op has a GPU kernel in this (CUDA) build, else "no"; in a
// build without CUDA, what the document recorded.
std::string GpuCell(const Entry& e, const GpuCells& recorded) {
  if (!BuiltWithCUDA()) {
    auto it = recorded.find(e.title);
    return it == recorded.end() ? kGpuUnknown : it->second;
  }
  op::NodeAttrs attrs;
  attrs.op = e.op;
  return op::FindDeviceKernel(attrs, /*on_gpu=*/true).found() ? "yes" : "no";
}

void RenderOp(std::ostringstream& out, const Entry& e) {
  const Op* op = e.op;
  out << "## " << e.title << "\n\n";
  if (!e.others.empty()) {
    out << "Also registered as";
    for (size_t i = 0; i < e.others.size(); ++i) out << (i ? ", `" : " `") << e.others[i] << "`";
    out << ".\n\n";
  }
  std::string description = op->description();
  while (!description.empty() && description.back() == '\n') description.pop_back();
  out << (description.empty() ? "(No description.)" : description) << "\n\n";

  out << "**Inputs**";
  if (op->arguments().empty()) {
    out << ": none.\n\n";
  } else {
    out << "\n\n| name | type | description |\n|---|---|---|\n";
    for (const auto& a : op->arguments())
      out << "| `" << a.name << "` | " << Cell(a.type) << " | " << Cell(a.description) << " |\n";
    out << "\n";
  }
  if (!op->key_var_num_args().empty())
    out << "The number of inputs is the parameter `" << op->key_var_num_args() << "`.\n\n";

  out << "**Parameters**";
  if (op->params().empty()) {
    out << ": none.\n\n";
  } else {
    out << "\n\n| name | type | default | description |\n|---|---|---|---|\n";
    for (const auto& p : op->params()) {
      out << "| `" << p.name << "` | " << Cell(p.type) << (p.is_axis ? " (axis)" : "") << " | "
          << (p.required              ? "required"
              : p.default_str.empty() ? "`\"\"`"
                                      : "`" + Cell(p.default_str) + "`")
          << " | " << Cell(p.description) << " |\n";
    }
    out << "\n";
  }
}

}  // namespace

GpuCells RecordedGpuCells(const std::string& document) {
  GpuCells cells;
  std::istringstream in(document);
  std::string line;
  // Rows "| [title](#anchor) | cell |".
  while (std::getline(in, line)) {
    if (line.rfind("| [", 0) != 0) continue;
    const size_t close = line.find("](#");
    const size_t bar = line.find(" | ", close == std::string::npos ? 0 : close);
    if (close == std::string::npos || bar == std::string::npos || line.size() < bar + 5) continue;
    cells[line.substr(3, close - 3)] = line.substr(bar + 3, line.size() - bar - 5);
  }
  return cells;
}

std::string RenderOperatorReference(const GpuCells& recorded) {
  const std::vector<Entry> entries = PublicOperators();
  std::ostringstream out;
  out << "# Operator reference\n\n"
      << "Generated from the operator registry by `tools/opdoc`; do not edit by hand. After\n"
      << "adding or changing an operator, regenerate it with\n"
      << "`cmake --build <build dir> --target operator_docs` (the `opdoc_fresh` test fails\n"
      << "while this file is stale).\n\n"
      << "Every operator works on NDArrays (`mx.nd.<name>`) and symbols (`mx.sym.<name>`).\n"
      << "Axes are 0-based here, as in C++ and symbol JSON; the Lua API takes the parameters\n"
      << "marked (axis) 1-based. Parameters are passed as key/value strings; dtypes are\n"
      << "spelled `float32`, `float64`, `float16`, `bfloat16`, `uint8`, `int8`, `int32`,\n"
      << "`int64`, `bool`.\n\n"
      << "The " << entries.size() << " operators, and whether each has a GPU kernel (ops\n"
      << "without one are an error on a GPU context, never a silent copy to the CPU):\n\n"
      << "| operator | GPU |\n|---|---|\n";
  for (const Entry& e : entries)
    out << "| [" << e.title << "](#" << Anchor(e.title) << ") | " << GpuCell(e, recorded) << " |\n";
  out << "\n";
  for (const Entry& e : entries) RenderOp(out, e);
  std::string text = out.str();
  while (text.size() >= 2 && text[text.size() - 1] == '\n' && text[text.size() - 2] == '\n')
    text.pop_back();
  return text;
}

}  // namespace tessera::opdoc
