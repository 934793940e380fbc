#include "task_queue.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "engine/base/error.h"

namespace tessera::shell {

TaskQueue::TaskQueue() : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  TS_CHECK(fd_ >= 0) << "cannot create the interpreter's eventfd: " << std::strerror(errno);
}

TaskQueue::~TaskQueue() {
  close(fd_);
}

void TaskQueue::Post(Task task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
    size_.store(tasks_.size(), std::memory_order_release);
  }
  Wake();
}

void TaskQueue::Wake() {
  uint64_t one = 1;
  // Fails only when the counter would overflow, and then it is readable anyway.
  [[maybe_unused]] ssize_t n = write(fd_, &one, sizeof one);
}

Task TaskQueue::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  if (tasks_.empty()) return {};
  Task t = std::move(tasks_.front());
  tasks_.pop_front();
  size_.store(tasks_.size(), std::memory_order_release);
  return t;
}

void TaskQueue::ClearWakeups() {
  uint64_t count;
  [[maybe_unused]] ssize_t n = read(fd_, &count, sizeof count);
}

}  // namespace tessera::shell
