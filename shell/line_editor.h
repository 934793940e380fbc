// Line input for the REPL: libedit (emacs keys, history in a file, a
// completion callback) on a terminal, plain reads otherwise. While it waits
// for a key it also watches `idle_fd` and calls `on_idle` when that fd is
// readable, so the interpreter keeps serving engine work at the prompt.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tessera::shell {

class LineEditor {
 public:
  struct Options {
    std::string history_path;  // empty: no history file
    int history_size = 1000;
    int idle_fd = -1;
    std::function<void()> on_idle;
    // Full words the word before the cursor may complete to.
    std::function<std::vector<std::string>(const std::string& word)> complete;
  };
  enum class Status { kLine, kInterrupted, kEof };

  explicit LineEditor(Options opts);
  ~LineEditor();
  LineEditor(const LineEditor&) = delete;
  LineEditor& operator=(const LineEditor&) = delete;

  // Reads one line (without its newline) into *line.
  Status ReadLine(const char* prompt, std::string* line);
  void AddHistory(const std::string& line);
  bool is_terminal() const { return el_ != nullptr; }

 private:
  struct Libedit;
  friend struct Libedit;
  Status ReadPlain(const char* prompt, std::string* line);
  void LoadHistory(void* hist);  // History*

  Options opts_;
  void* el_ = nullptr;    // EditLine*
  void* hist_ = nullptr;  // History*
  const char* prompt_ = "";
  bool interrupted_ = false;
  int key_fd_ = 0;  // stdin, or a non-blocking open of the terminal (see the constructor)
};

}  // namespace tessera::shell
