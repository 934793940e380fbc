"""The REPL driven through a pseudo-terminal, as a user types at it.

Run: TESSERA_BIN=build/tessera python3 -m unittest discover -s tests/shell
"""
import os
import pty
import re
import select
import signal
import tempfile
import time
import unittest

BIN = os.environ.get("TESSERA_BIN", "tessera")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]|\r")


class Repl:
    """A tessera REPL on a pty: send keys, wait for output."""

    def __init__(self, history):
        env = dict(os.environ, TERM="xterm", NO_COLOR="1", TESSERA_HISTORY=history)
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            try:
                os.chdir(os.path.dirname(history))  # files a command writes land there
                os.execve(BIN, [BIN], env)
            finally:
                os._exit(127)
        self.out = ""
        self.seen = 0  # output before this index has been matched already

    def send(self, keys):
        os.write(self.fd, keys.encode())

    def read_some(self, timeout):
        r, _, _ = select.select([self.fd], [], [], timeout)
        if not r:
            return False
        try:
            data = os.read(self.fd, 4096)
        except OSError:
            return False
        if not data:
            return False
        self.out += data.decode(errors="replace")
        return True

    def expect(self, pattern, timeout=10):
        """Waits until `pattern` (a regex) appears in new output; returns the match."""
        deadline = time.monotonic() + timeout
        while True:
            text = ANSI.sub("", self.out)
            m = re.compile(pattern).search(text, self.seen)
            if m:
                self.seen = m.end()
                return m
            left = deadline - time.monotonic()
            if left <= 0 or not self.read_some(left) and time.monotonic() >= deadline:
                raise AssertionError(f"timed out waiting for {pattern!r}; output:\n{text[-2000:]}")

    def prompt(self):
        return self.expect(r"(?m)^> ")

    def line(self, text):
        self.send(text + "\r")

    def wait_exit(self, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.pid = None
                return os.waitstatus_to_exitcode(status)
            self.read_some(0.05)
        raise AssertionError("tessera did not exit")

    def close(self):
        if self.pid:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        os.close(self.fd)


class ReplTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.history = os.path.join(tmp.name, "history")
        self.repl = Repl(self.history)
        self.addCleanup(self.repl.close)
        self.repl.expect(r"Tessera .* Ctrl-D to quit")
        self.repl.prompt()

    def test_prints_expression_values(self):
        r = self.repl
        r.line("1 + 2")
        r.expect(r"\n3\n")
        r.prompt()
        r.line("t = {b = 1, a = {2, 'x'}}")
        r.prompt()
        r.line("t")
        r.expect(r'\{a = \{2, "x"\}, b = 1\}')
        r.prompt()
        r.line("40 + 2;")  # a trailing ';' prints nothing
        r.prompt()
        r.line("'after'")
        m = r.expect(r'"after"')
        self.assertNotIn("42", ANSI.sub("", r.out)[m.start() - 40:m.start()])

    def test_the_prompt_waits_without_the_operator_registrations(self):
        r = self.repl
        r.line("require('tessera.internal').registry_loaded()")
        r.expect(r"\nfalse\n")
        r.prompt()

    def test_completion(self):
        r = self.repl
        r.send("mx.engine.pu\t")
        r.expect(r"mx\.engine\.push")
        r.line(" ~= nil")
        r.expect(r"\ntrue\n")
        r.prompt()
        r.send("mx.cp\t\t")  # two candidates: completes the common part, then lists them
        r.expect(r"mx\.cpu\s+mx\.cpu_pinned")
        r.send("\x15")  # Ctrl-U clears the line
        r.line("")
        r.prompt()

    def test_multiline_input(self):
        r = self.repl
        r.line("function twice(x)")
        r.expect(r"\n>> ")
        r.line("  return 2 * x")
        r.expect(r"\n>> ")
        r.line("end")
        r.prompt()
        r.line("twice(21)")
        r.expect(r"\n42\n")

    def test_error_then_a_working_line(self):
        r = self.repl
        r.line("error('oops')")
        r.expect(r"oops")
        r.expect(r"stack traceback")
        r.prompt()
        r.line("x = = 1")
        r.expect(r"unexpected symbol")
        r.prompt()
        r.line("6 * 7")
        r.expect(r"\n42\n")

    # ThreadSanitizer defers a signal's handler to the thread's next call it
    # intercepts, and a loop of pure Lua makes none.
    @unittest.skipIf(os.environ.get("TESSERA_SANITIZE") == "thread",
                     "signals wait for an intercepted call under ThreadSanitizer")
    def test_ctrl_c_interrupts_a_loop(self):
        r = self.repl
        r.line("while true do end")
        time.sleep(0.3)
        r.send("\x03")
        r.expect(r"interrupted")
        r.prompt()
        r.line("1 + 1")
        r.expect(r"\n2\n")

    def test_ctrl_c_interrupts_a_wait(self):
        r = self.repl
        r.line("v = mx.engine.new_var(); mx.engine._sleep(1.5, {write = {v}}); mx.engine.wait_for_var(v)")
        time.sleep(0.3)
        r.send("\x03")
        r.expect(r"interrupted")
        r.prompt()
        r.line("2 + 3")
        r.expect(r"\n5\n")

    def test_ctrl_c_interrupts_a_push_held_by_the_run_ahead_bound(self):
        r = self.repl
        # One op in flight at most. A C++ op: the second push waits for the
        # first (two seconds). Lua ops: the pusher runs the queued one while
        # it waits for room (it alone can), and that one never ends. Ctrl-C
        # gets the prompt back from both.
        for pushes in ("mx.engine._sleep(2, {write = {v}})",
                       "mx.engine.push(function() while true do end end, {write = {v}})"):
            r.line("mx.engine.set_max_inflight(1); v = mx.engine.new_var(); "
                   "for i = 1, 5 do " + pushes + " end")
            time.sleep(0.5)
            r.send("\x03")
            r.expect(r"interrupted", timeout=1.5)
            r.prompt()
            r.line("4 + 4")
            r.expect(r"\n8\n")

    def test_ctrl_c_clears_the_input(self):
        r = self.repl
        # Many rounds, each a few milliseconds: Ctrl-C can arrive between the
        # editor seeing the typed keys and reading them (the terminal then
        # drops them), or while it serves engine work, and neither may leave
        # it waiting for another key.
        for _ in range(100):
            r.send("this is not lua")
            r.send("\x03")
            r.expect(r"\^C")
            r.prompt()
        r.line("function g()")
        r.expect(r"\n>> ")
        r.send("\x03")  # also drops a half-typed chunk
        r.prompt()
        r.line("2 + 2")
        r.expect(r"\n4\n")

    def test_pushed_lua_runs_while_idle_at_the_prompt(self):
        r = self.repl
        r.line("v = mx.engine.new_var(); mx.engine._sleep(0.2, {write = {v}}); "
               "mx.engine.push(function() print('ran' .. 'while-idle') end, {read = {v}})")
        r.prompt()
        r.expect(r"ranwhile-idle", timeout=5)  # no key pressed meanwhile

    def test_lua_custom_op_prototyped_at_the_prompt(self):
        r = self.repl
        # A Lua op defined at the prompt, edited (registered again), failing
        # in its forward: the error names the op and the REPL carries on.
        r.line("Op = mx.operator.CustomOp:extend(); "
               "function Op:forward(t, req, i, o) self:assign(o[1], req[1], i[1] * 3) end")
        r.prompt()
        r.line("mx.operator.register('tripled', {create_operator = function() "
               "return setmetatable({}, Op) end})")
        r.prompt()
        r.line("mx.nd.Custom(mx.nd.array({1, 2}), {op_type = 'tripled'}):totable()[2]")
        r.expect(r"\n6\n")
        r.prompt()
        r.line("function Op:forward() error('broken edit') end")
        r.prompt()
        r.line("y = mx.nd.Custom(mx.nd.array({1, 2}), {op_type = 'tripled'}); print(y)")
        r.expect(r"Custom 'tripled' forward.*broken edit")
        r.prompt()
        r.line("function Op:forward(t, req, i, o) self:assign(o[1], req[1], i[1] + 1) end")
        r.prompt()
        r.line("mx.nd.Custom(mx.nd.array({1, 2}), {op_type = 'tripled'}):totable()[2]")
        r.expect(r"\n3\n")

    def test_commands(self):
        r = self.repl
        r.line(":help")
        r.expect(r":time STATEMENT")
        r.prompt()
        r.line(":engine")
        r.expect(r"threaded engine, \d+ ops pending")
        r.prompt()
        r.line("big = mx.nd.ones({1024, 1024}); big:wait_to_read()")
        r.prompt()
        r.line(":memory")
        r.expect(r"cpu\(0\) +[0-9.]+ MiB.*\n.*engine op blocks: ")
        r.prompt()
        r.line(":time mx.engine._sleep(0.05)")
        m = r.expect(r"time: ([0-9.]+) ms")
        self.assertGreaterEqual(float(m.group(1)), 45)
        r.prompt()
        r.line("v = mx.engine.new_var(); mx.engine.push(function() error('bad') end, {write = {v}, name = 'oops_op'})")
        r.prompt()
        r.line(":wait")
        r.expect(r"oops_op")
        r.prompt()
        r.line(":nonsense")
        r.expect(r"unknown command ':nonsense'")
        r.prompt()
        r.line("?engine.push")
        r.expect(r"mx\.engine\.push\(fn")
        r.prompt()
        r.line("net = mx.sym.FullyConnected{data = mx.sym.Variable('data'), num_hidden = 3, name = 'fc'}")
        r.prompt()
        r.line(":plot net")
        r.expect(r"plot written to net\.svg")
        r.prompt()
        with open(os.path.join(os.path.dirname(self.history), "net.svg")) as f:
            self.assertIn("<title>fc</title>", f.read())
        r.line(":plot 42")
        r.expect(r"plot_network: expected a Symbol")
        r.prompt()
        r.line(":timing on")
        r.expect(r"timing on")
        r.prompt()
        r.line("x = mx.nd.ones({3, 4}) * 2")
        r.expect(r"time: [0-9.]+ ms\r?\n")
        r.prompt()
        r.line(":timing off")
        r.expect(r"timing off")
        r.prompt()
        r.line(":who")
        r.expect(r"x +NDArray +3x4 +float32 +cpu\(0\) +48 B")
        r.prompt()

    def test_time_waits_for_its_own_work_and_reports_its_failure(self):
        r = self.repl
        # Its work fails: the time, marked failed, then the error naming the op.
        r.line(":time w = mx.engine.new_var(); "
               "mx.engine._fail('kaboom', {write = {w}, name = 'timed_op'})")
        r.expect(r"time: [0-9.]+ ms \(failed\)")
        r.expect(r"timed_op.*kaboom")
        r.prompt()
        # A Lua error in the statement: its error, then the time.
        r.line(":time error('lua side')")
        r.expect(r"lua side")
        r.expect(r"time: [0-9.]+ ms \(failed\)")
        r.prompt()
        # Work outstanding from before is not waited for.
        r.line("v = mx.engine.new_var(); mx.engine._sleep(3, {write = {v}})")
        r.prompt()
        r.line(":time local s = 0; for i = 1, 1000 do s = s + i end")
        m = r.expect(r"time: ([0-9.]+) ms")
        self.assertLess(float(m.group(1)), 1500)
        r.prompt()

    def test_commands_refuse_junk_arguments(self):
        r = self.repl
        for cmd in (":memory foo", ":wait now", ":engine x", ":help me", ":quit please",
                    ":profile on now", ":profile off x", ":profile dump a b", ":profile", ":plot",
                    ":timing", ":timing maybe", ":who x"):
            r.line(cmd)
            r.expect(r"usage: :" + cmd.split()[0][1:])
            r.prompt()
        r.line("1 + 1")  # still here: ':quit please' did not quit
        r.expect(r"\n2\n")

    def test_ctrl_d_at_a_continuation_prompt_drops_the_chunk(self):
        r = self.repl
        r.line("function half_typed()")
        r.expect(r"\n>> ")
        r.line("  return 1")
        r.expect(r"\n>> ")
        r.send("\x04")
        r.prompt()
        r.line("half_typed == nil")
        r.expect(r"\ntrue\n")
        r.prompt()
        r.send("\x04")  # at "> " it leaves
        self.assertEqual(r.wait_exit(), 0)

    def test_a_history_file_that_is_a_fifo_is_not_read(self):
        # Reading it would wait for a writer before the first prompt.
        fifo = os.path.join(os.path.dirname(self.history), "fifo_history")
        os.mkfifo(fifo)
        other = Repl(fifo)
        self.addCleanup(other.close)
        other.expect(r"history: " + re.escape(fifo) + r" is not a regular file \(it is a FIFO\)")
        other.prompt()
        other.line("3 * 3")
        other.expect(r"\n9\n")

    def test_ctrl_d_exits_and_history_is_kept(self):
        r = self.repl
        r.line("history_marker = 1")
        r.prompt()
        r.send("\x04")
        self.assertEqual(r.wait_exit(), 0)
        with open(self.history) as f:
            self.assertIn("history_marker", f.read())


if __name__ == "__main__":
    unittest.main()


class LiveChartTest(unittest.TestCase):
    """Module:fit on a UTF-8 terminal: the per-batch metric as a braille chart
    under the live progress bar, redrawn with it and cleared at the epoch's end."""

    def test_fit_draws_a_live_chart(self):
        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, "fit.lua")
            with open(script, "w") as f:
                f.write(
                    "local net = mx.sym.SoftmaxOutput{data = mx.sym.FullyConnected{"
                    "data = mx.sym.Variable('data'), num_hidden = 2, name = 'fc'}, name = 'softmax'}\n"
                    "local x = mx.nd.random.uniform(-1, 1, {400, 3})\n"
                    "local y = mx.nd.zeros({400})\n"
                    "mx.mod.Module(net):fit(mx.io.NDArrayIter{data = x, label = y, batch_size = 4},"
                    " {num_epoch = 1})\n")
            env = dict(os.environ, TERM="xterm", LANG="C.UTF-8", LC_ALL="C.UTF-8")
            pid, fd = pty.fork()
            if pid == 0:
                try:
                    os.execve(BIN, [BIN, script], env)
                finally:
                    os._exit(127)
            out = b""
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                r, _, _ = select.select([fd], [], [], 1)
                if r:
                    try:
                        data = os.read(fd, 65536)
                    except OSError:
                        break
                    if not data:
                        break
                    out += data
                if os.waitpid(pid, os.WNOHANG)[0]:
                    pid = None
                    break
            if pid:
                os.kill(pid, signal.SIGKILL)
            while select.select([fd], [], [], 0.2)[0]:  # what it wrote before exiting
                try:
                    data = os.read(fd, 65536)
                except OSError:
                    break
                if not data:
                    break
                out += data
            os.close(fd)
            text = out.decode(errors="replace")
            self.assertTrue(any(0x2800 <= ord(c) <= 0x28FF for c in text), text[-500:])
            self.assertIn("\x1b[4A", text)  # back up to the bar after each chart
            self.assertIn("\x1b[J", text)  # the chart cleared at the end
            self.assertIn("Epoch 0: train accuracy=", text)
