#include "engine/scheduler/parker.h"

#include <mutex>

namespace tessera::engine {

constinit thread_local Parker* parker_detail::tls_parker = nullptr;

namespace {

std::mutex free_mu;
Parker* free_list = nullptr;

struct ThreadParker {
  Parker* parker;
  ThreadParker() {
    std::lock_guard<std::mutex> lock(free_mu);
    if (free_list) {
      parker = free_list;
      free_list = parker->next_free;
    } else {
      parker = new Parker();
    }
  }
  ~ThreadParker() {
    std::lock_guard<std::mutex> lock(free_mu);
    parker->next_free = free_list;
    free_list = parker;
  }
};

}  // namespace

Parker* Parker::MakeCurrent() {
  thread_local ThreadParker tp;  // gives the parker back at thread exit
  parker_detail::tls_parker = tp.parker;
  return tp.parker;
}

}  // namespace tessera::engine
