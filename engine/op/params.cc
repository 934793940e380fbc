#include "engine/op/params.h"

namespace tessera::op {

void InitParams(void* obj, const std::vector<std::unique_ptr<FieldBase>>& fields,
                const ParamDict& kwargs, std::string_view op, bool allow_unknown) {
  for (const auto& [key, value] : kwargs) {
    const FieldBase* found = nullptr;
    for (const auto& f : fields)
      if (f->info().name == key) found = f.get();
    if (found) {
      found->Set(obj, value, op);
    } else if (!allow_unknown && !key.starts_with("__")) {  // "__attr__" keys belong to symbols
      std::string names;
      for (const auto& f : fields) names += (names.empty() ? "" : ", ") + f->info().name;
      TS_THROW << op << ": unknown parameter '" << key << "'"
               << (names.empty() ? " (it takes no parameters)" : " (parameters: " + names + ")");
    }
  }
  for (const auto& f : fields) {
    if (kwargs.count(f->info().name)) continue;
    TS_CHECK(!f->info().required) << op << ": required parameter '" << f->info().name
                                  << "' is missing (" << f->info().type << ": "
                                  << f->info().description << ")";
    f->SetDefault(obj);
  }
}

}  // namespace tessera::op
