// The executor's arrays by name, and copying parameters in by name.
#include "engine/graph/executor.h"

namespace tessera::graph {

namespace {

std::map<std::string, NDArray> Zip(const std::vector<std::string>& names,
                                   const std::vector<NDArray>& arrays) {
  std::map<std::string, NDArray> m;
  for (size_t i = 0; i < names.size() && i < arrays.size(); ++i)
    if (!arrays[i].is_none()) m[names[i]] = arrays[i];
  return m;
}

void CopyByName(const std::map<std::string, NDArray>& from, std::map<std::string, NDArray> to,
                const char* what, bool allow_extra) {
  for (const auto& [name, src] : from) {
    auto it = to.find(name);
    if (it == to.end()) {
      TS_CHECK(allow_extra) << "copy_params_from: '" << name << "' is not " << what
                            << " of the executor (pass allow_extra to skip it)";
      continue;
    }
    TS_CHECK(!src.is_none()) << "copy_params_from: the array for '" << name << "' is empty";
    TS_CHECK(src.shape() == it->second.shape())
        << "copy_params_from: '" << name << "' has shape " << src.shape() << ", the executor's "
        << it->second.shape();
    // A different dtype converts (as MXNet's copyto does).
    CopyFromTo(src.dtype() == it->second.dtype() ? src : src.AsType(it->second.dtype()),
               it->second);
  }
}

}  // namespace

std::map<std::string, NDArray> Executor::ArgDict() const {
  return Zip(symbol().ListArguments(), arg_arrays());
}
std::map<std::string, NDArray> Executor::GradDict() const {
  return Zip(symbol().ListArguments(), grad_arrays());
}
std::map<std::string, NDArray> Executor::AuxDict() const {
  return Zip(symbol().ListAuxiliaryStates(), aux_arrays());
}

void Executor::CopyParamsFrom(const std::map<std::string, NDArray>& args,
                              const std::map<std::string, NDArray>& aux, bool allow_extra) {
  CopyByName(args, ArgDict(), "an argument", allow_extra);
  CopyByName(aux, AuxDict(), "an auxiliary state", allow_extra);
}

}  // namespace tessera::graph
