#include "engine/scheduler/error_record.h"

#include <new>

#include "engine/base/error.h"

namespace tessera::engine {

ErrorRef MakeErrorRecord(std::exception_ptr error, const char* op_name) {
  auto rec = std::make_shared<ErrorRecord>();
  rec->error = std::move(error);
  rec->op_name = op_name ? op_name : "unnamed";
  return rec;
}

void ErrorRecord::Rethrow(size_t more_errors) const {
  std::string what;
  try {
    std::rethrow_exception(error);
  } catch (const std::bad_alloc&) {
    what = "out of memory: a host allocation failed";
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "unknown exception";
  }
  // An op that failed because the same op failed inside it (a Lua op waiting
  // on another push of itself) says so once, not once per level.
  const std::string prefix = "engine op '" + op_name + "' failed: ";
  std::string msg = what.starts_with(prefix) ? what : prefix + what;
  if (more_errors)
    msg += " (and " + std::to_string(more_errors) + " more failed op" +
           (more_errors > 1 ? "s" : "") + ")";
  throw Error(msg);
}

}  // namespace tessera::engine
