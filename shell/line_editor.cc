#include "line_editor.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <histedit.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <cwchar>
#include <exception>

#include "engine/base/regular_file.h"
#include "engine/base/shared_library.h"
#include "interrupt.h"

namespace tessera::shell {
namespace {

// libedit is opened when the prompt starts, not with the program: scripts
// and -e never need it, and loading it (with libtinfo, libbsd and libmd)
// bound a twentieth of the start-up. Without it the prompt reads plain
// lines. The header gives the functions' types.
#define TS_LIBEDIT_FUNCTIONS(X) \
  X(init, el_init)              \
  X(end, el_end)                \
  X(get, el_get)                \
  X(set, el_set)                \
  X(wset, el_wset)              \
  X(gets, el_gets)              \
  X(line, el_line)              \
  X(insertstr, el_insertstr)    \
  X(reset, el_reset)            \
  X(source, el_source)          \
  X(hist_init, history_init)    \
  X(hist_end, history_end)      \
  X(hist, history)

struct EditApi {
  TS_LIBRARY_FUNCTIONS(TS_LIBEDIT_FUNCTIONS)
  bool ok = false;
};

EditApi OpenLibedit() {
  EditApi a;
  void* lib = nullptr;
  for (const char* path : {TESSERA_LIBEDIT_LIBRARY, "libedit.so.2"})
    if ((lib = dlopen(path, RTLD_NOW | RTLD_LOCAL))) break;
  if (!lib) return a;
  a.ok = a.TryBind(lib);
  return a;
}

// Opened once, by the first prompt that can edit lines.
const EditApi& Edit() {
  static const EditApi api = OpenLibedit();
  return api;
}

}  // namespace
}  // namespace tessera::shell

namespace tessera::shell {

// libedit's C callbacks, with access to the editor's state.
struct LineEditor::Libedit {
  static LineEditor* Self(EditLine* el) {
    void* self = nullptr;
    Edit().get(el, EL_CLIENTDATA, &self);
    return static_cast<LineEditor*>(self);
  }

  static char* Prompt(EditLine* el) { return const_cast<char*>(Self(el)->prompt_); }

  // Reads one character, serving the idle fd and Ctrl-C while it waits.
  static int GetChar(EditLine* el, wchar_t* out) {
    LineEditor* self = Self(el);
    std::mbstate_t state{};
    auto interrupted = [self] { return self->interrupted_ = TakeInterrupt(); };
    for (;;) {
      // Checked before poll() too: on_idle clears the wakeup a Ctrl-C wrote,
      // so one that arrived during it would otherwise leave poll() asleep.
      if (interrupted()) return -1;
      pollfd fds[2] = {{self->key_fd_, POLLIN, 0}, {self->opts_.idle_fd, POLLIN, 0}};
      int n = poll(fds, self->opts_.idle_fd >= 0 ? 2 : 1, -1);
      if (interrupted()) return -1;
      if (n < 0) {
        if (errno == EINTR) continue;
        return -1;
      }
      if (self->opts_.idle_fd >= 0 && (fds[1].revents & POLLIN)) {
        if (self->opts_.on_idle) {
          // Output of the work goes on its own lines; then redraw the input.
          std::fputs("\r\033[K", stdout);
          std::fflush(stdout);
          self->opts_.on_idle();
          std::fflush(stdout);
          Edit().set(el, EL_REFRESH);
        }
        if (!(fds[0].revents & (POLLIN | POLLHUP))) continue;
      }
      // Finds nothing although poll() saw a key when a Ctrl-C came in
      // between: the terminal drops what was typed ahead. key_fd_ does not
      // block, so the next poll() takes the interrupt. (On the blocking
      // fallback, ReadLine's InterruptBreaksReads ends the read, unless the
      // signal came before it started.)
      char c;
      ssize_t r = read(self->key_fd_, &c, 1);
      if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (r <= 0) return static_cast<int>(r);
      size_t k = std::mbrtowc(out, &c, 1, &state);
      if (k == static_cast<size_t>(-2)) continue;  // more bytes of a multibyte character
      if (k == static_cast<size_t>(-1)) {
        state = {};
        *out = static_cast<unsigned char>(c);  // not valid in the locale: take the byte
      }
      return 1;
    }
  }

  static unsigned char Complete(EditLine* el, int) {
    LineEditor* self = Self(el);
    if (!self->opts_.complete) return CC_ERROR;
    const LineInfo* li = Edit().line(el);
    std::string before(li->buffer, li->cursor);
    size_t start = before.size();
    while (start > 0) {
      char c = before[start - 1];
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ':')) break;
      --start;
    }
    std::string word = before.substr(start);
    std::vector<std::string> cands = self->opts_.complete(word);
    if (cands.empty()) return CC_ERROR;
    std::string common = cands[0];
    for (const std::string& c : cands) {
      size_t i = 0;
      while (i < common.size() && i < c.size() && common[i] == c[i]) ++i;
      common.resize(i);
    }
    if (common.size() > word.size()) {
      Edit().insertstr(el, common.substr(word.size()).c_str());
      return CC_REFRESH;
    }
    if (cands.size() == 1) return CC_REFRESH;
    // Several: list them in columns under the input, then redraw it.
    size_t width = 0;
    for (const std::string& c : cands) width = std::max(width, c.size());
    width += 2;
    size_t cols = std::max<size_t>(1, 80 / width);
    std::fputs("\n", stdout);
    for (size_t i = 0; i < cands.size(); ++i) {
      std::fprintf(stdout, "%-*s", static_cast<int>(width), cands[i].c_str());
      if ((i + 1) % cols == 0 || i + 1 == cands.size()) std::fputs("\n", stdout);
    }
    std::fflush(stdout);
    return CC_REDISPLAY;
  }
};

LineEditor::LineEditor(Options opts) : opts_(std::move(opts)) {
  if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO) || !Edit().ok) return;
  EditLine* el = Edit().init("tessera", stdin, stdout, stderr);
  if (!el) return;
  el_ = el;
  // Keys are read through a second, non-blocking open of the terminal: a
  // blocking read can miss a Ctrl-C that arrives just before it. O_NONBLOCK
  // on stdin itself would reach the shell that started us. /proc's link
  // serves where the terminal has no name here (a container without /dev/pts).
  const char* tty = ttyname(STDIN_FILENO);
  key_fd_ = open(tty ? tty : "/proc/self/fd/0", O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (key_fd_ < 0) key_fd_ = STDIN_FILENO;
  Edit().set(el, EL_CLIENTDATA, this);
  Edit().set(el, EL_EDITOR, "emacs");
  Edit().set(el, EL_PROMPT, &Libedit::Prompt);
  Edit().set(el, EL_GETCFN, &Libedit::GetChar);
  // The wide call keeps these (static) strings as given; the narrow el_set
  // copies them with wcsdup, and el_end never frees the copies.
  Edit().wset(el, EL_ADDFN, L"tessera-complete", L"complete a name", &Libedit::Complete);
  Edit().set(el, EL_BIND, "^I", "tessera-complete", nullptr);
  History* h = Edit().hist_init();
  if (h) {
    HistEvent ev;
    Edit().hist(h, &ev, H_SETSIZE, opts_.history_size);
    Edit().hist(h, &ev, H_SETUNIQUE, 1);
    if (!opts_.history_path.empty()) LoadHistory(h);
    Edit().set(el, EL_HIST, Edit().hist, h);
    hist_ = h;
  }
  Edit().source(el, nullptr);  // the user's ~/.editrc, if any
}

// Reads the history file when it is a regular file; one that is missing is
// made by the first save. Anything else named there (a FIFO would block the
// start-up for ever, waiting for a writer) is left alone, with a warning.
void LineEditor::LoadHistory(void* hist) {
  const std::string& path = opts_.history_path;
  try {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return;
    CheckRegularFile(path, "history");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera: %s; the history is not loaded\n", e.what());
    return;
  }
  HistEvent ev;
  Edit().hist(static_cast<History*>(hist), &ev, H_LOAD, path.c_str());
}

LineEditor::~LineEditor() {
  if (hist_) Edit().hist_end(static_cast<History*>(hist_));
  if (el_) Edit().end(static_cast<EditLine*>(el_));
  if (key_fd_ != STDIN_FILENO) close(key_fd_);
}

LineEditor::Status LineEditor::ReadLine(const char* prompt, std::string* line) {
  if (!el_) return ReadPlain(prompt, line);
  prompt_ = prompt;
  interrupted_ = false;
  int count = 0;
  // Raw mode before the prompt is drawn: el_gets draws it first and switches
  // the terminal at its first read, so keys typed in between (a paste, a
  // quick Ctrl-D) would meet the cooked terminal: echoed twice, or an EOF
  // lost in the switch. el_gets restores cooked mode when it returns.
  Edit().set(static_cast<EditLine*>(el_), EL_PREP_TERM, 1);
  const char* s;
  {
    InterruptBreaksReads breaks_reads;  // see GetChar's read
    s = Edit().gets(static_cast<EditLine*>(el_), &count);
  }
  if (interrupted_) {
    // Drop what was typed: the next read starts on a fresh line.
    Edit().reset(static_cast<EditLine*>(el_));
    std::fputs("^C\n", stdout);
    std::fflush(stdout);
    return Status::kInterrupted;
  }
  if (!s || count <= 0) return Status::kEof;
  line->assign(s, count);
  while (!line->empty() && (line->back() == '\n' || line->back() == '\r')) line->pop_back();
  return Status::kLine;
}

LineEditor::Status LineEditor::ReadPlain(const char* prompt, std::string* line) {
  if (isatty(STDOUT_FILENO)) {
    std::fputs(prompt, stdout);
    std::fflush(stdout);
  }
  line->clear();
  for (;;) {
    int c = std::fgetc(stdin);
    if (c == EOF) {
      if (std::ferror(stdin) && errno == EINTR && TakeInterrupt()) {
        std::clearerr(stdin);
        return Status::kInterrupted;
      }
      return line->empty() ? Status::kEof : Status::kLine;
    }
    if (c == '\n') return Status::kLine;
    line->push_back(static_cast<char>(c));
  }
}

void LineEditor::AddHistory(const std::string& line) {
  if (!hist_ || line.empty()) return;
  HistEvent ev;
  auto* h = static_cast<History*>(hist_);
  Edit().hist(h, &ev, H_ENTER, line.c_str());
  // Saved after every line, so a crash or a kill loses nothing; written to a
  // temporary name and renamed, so a save cut short (or two sessions saving
  // at once) never leaves a half-written file. A bounded history is small.
  if (opts_.history_path.empty()) return;
  const std::string tmp = opts_.history_path + ".tmp." + std::to_string(getpid());
  if (Edit().hist(h, &ev, H_SAVE, tmp.c_str()) < 0 ||
      std::rename(tmp.c_str(), opts_.history_path.c_str()) != 0)
    std::remove(tmp.c_str());
}

}  // namespace tessera::shell
