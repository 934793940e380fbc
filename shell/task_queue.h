// A queue of work for the interpreter thread. Any thread may post; only the
// interpreter thread takes. Posting also signals an eventfd, so the
// interpreter can sleep in poll() on it together with the terminal.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <mutex>

struct lua_State;

namespace tessera::shell {

using Task = std::function<void(lua_State*)>;

class TaskQueue {
 public:
  TaskQueue();
  ~TaskQueue();
  TaskQueue(const TaskQueue&) = delete;
  TaskQueue& operator=(const TaskQueue&) = delete;

  // Any thread. Tasks must not throw.
  void Post(Task task);
  // Any thread: makes a sleeping interpreter look again, posting nothing.
  void Wake();
  // Interpreter thread: the oldest task, or an empty function.
  Task Take();
  bool empty() const { return size_.load(std::memory_order_acquire) == 0; }
  // Readable while tasks or wake-ups are waiting; ClearWakeups() resets it.
  int fd() const { return fd_; }
  void ClearWakeups();

 private:
  int fd_;
  std::mutex mu_;
  std::deque<Task> tasks_;
  std::atomic<size_t> size_{0};
};

}  // namespace tessera::shell
